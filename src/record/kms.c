#include "kms.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"
#include "util/mode_refresh.h"
#include "util/private_fd.h"

#define DRI_DIR "/dev/dri"

#ifdef FSCOPE_HAVE_LIBDRM
#include <xf86drm.h>
#include <xf86drmMode.h>

/* What the ticks read: the card each output's CRTC is on. */
struct kms {
    int fds[REC_KMS_OUTPUTS];       /* per output; several may share a card (dup'ed) */
    uint32_t crtc_index[REC_KMS_OUTPUTS]; /* in the card's CRTC list, for drmWaitVBlank */
};

static void say(struct rec_kms *rec, enum rec_kms_state state, const char *why)
{
    rec->state = state;
    snprintf(rec->why, sizeof(rec->why), "%s", why);
}

/* The value of the property called name among an object's, or -1 when it has none. */
static int64_t property(int fd, uint32_t object, uint32_t type, const char *name)
{
    drmModeObjectProperties *props = drmModeObjectGetProperties(fd, object, type);
    int64_t value = -1;
    for (uint32_t i = 0; props && i < props->count_props && value < 0; i++) {
        drmModePropertyRes *p = drmModeGetProperty(fd, props->props[i]);
        if (p && strcmp(p->name, name) == 0)
            value = (int64_t)props->prop_values[i];
        drmModeFreeProperty(p);
    }
    drmModeFreeObjectProperties(props);
    return value;
}

static uint8_t tristate(int64_t value)
{
    return value < 0 ? KMS_UNKNOWN : value != 0;
}

/* The mode's refresh in mHz from its pixel clock (kHz) and totals: exact where vrefresh is
 * rounded (59.94 Hz reads 60 there). */
static uint32_t mode_refresh_mhz(const drmModeModeInfo *m)
{
    if (!m->htotal || !m->vtotal)
        return m->vrefresh * 1000u;
    uint32_t mhz = fscope_mode_refresh_mhz((uint64_t)m->clock * 1000u, m->htotal, m->vtotal,
                                           m->flags & DRM_MODE_FLAG_INTERLACE,
                                           m->flags & DRM_MODE_FLAG_DBLSCAN);
    return m->vscan > 1 ? mhz / m->vscan : mhz;
}

/* Every connected connector of one card with an active CRTC. Returns how many were added. */
static unsigned read_card(struct kms *k, struct rec_kms *rec, int fd, const char *card)
{
    drmModeRes *res = drmModeGetResources(fd);
    if (!res)
        return 0;
    unsigned added = 0;
    for (int c = 0; c < res->count_connectors && rec->count < REC_KMS_OUTPUTS; c++) {
        drmModeConnector *conn = drmModeGetConnector(fd, res->connectors[c]);
        if (!conn || conn->connection != DRM_MODE_CONNECTED || !conn->encoder_id) {
            drmModeFreeConnector(conn);
            continue;
        }
        drmModeEncoder *enc = drmModeGetEncoder(fd, conn->encoder_id);
        drmModeCrtc *crtc = enc && enc->crtc_id ? drmModeGetCrtc(fd, enc->crtc_id) : NULL;
        if (crtc && crtc->mode_valid) {
            struct rec_kms_output *o = &rec->outputs[rec->count];
            const char *type = drmModeGetConnectorTypeName(conn->connector_type);
            snprintf(o->card, sizeof(o->card), "%.15s", card);
            snprintf(o->connector, sizeof(o->connector), "%s-%u", type ? type : "Unknown",
                     conn->connector_type_id);
            o->crtc_id = crtc->crtc_id;
            o->width = crtc->mode.hdisplay;
            o->height = crtc->mode.vdisplay;
            o->mode_refresh_mhz = mode_refresh_mhz(&crtc->mode);
            o->vrr_capable = tristate(property(fd, conn->connector_id,
                                               DRM_MODE_OBJECT_CONNECTOR, "vrr_capable"));
            o->vrr_enabled = tristate(property(fd, crtc->crtc_id, DRM_MODE_OBJECT_CRTC,
                                               "VRR_ENABLED"));
            for (int i = 0; i < res->count_crtcs; i++)
                if (res->crtcs[i] == crtc->crtc_id)
                    k->crtc_index[rec->count] = (uint32_t)i;
            k->fds[rec->count] = added ? fscope_fd_high(fcntl(fd, F_DUPFD_CLOEXEC, 0)) : fd;
            rec->count++;
            added++;
        }
        drmModeFreeCrtc(crtc);
        drmModeFreeEncoder(enc);
        drmModeFreeConnector(conn);
    }
    drmModeFreeResources(res);
    return added;
}

struct kms *kms_open(struct rec_kms *rec)
{
    DIR *dir = opendir(DRI_DIR);
    if (!dir) {
        char why[128];
        snprintf(why, sizeof(why), "no DRM device (" DRI_DIR ": %s)", strerror(errno));
        say(rec, REC_KMS_NO_DEVICE, why);
        return NULL;
    }
    struct kms *k = calloc(1, sizeof(*k));
    if (!k) {
        closedir(dir);
        return NULL;
    }
    for (unsigned i = 0; i < REC_KMS_OUTPUTS; i++)
        k->fds[i] = -1;
    unsigned cards = 0;
    char refused[96] = "";
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (strncmp(e->d_name, "card", 4) != 0)
            continue;
        cards++;
        /* Reading KMS state needs no write access; the first opener of a card can be made
         * its master, which a game or compositor starting after us would then miss. */
        int fd = openat(dirfd(dir), e->d_name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
            snprintf(refused, sizeof(refused), "%.16s: %s", e->d_name, strerror(errno));
            continue;
        }
        fd = fscope_fd_high(fd);
        if (drmIsMaster(fd))
            drmDropMaster(fd);
        if (!read_card(k, rec, fd, e->d_name))
            fscope_fd_close(fd);
    }
    closedir(dir);
    if (rec->count) {
        rec->state = REC_KMS_READ;
        return k;
    }
    free(k);
    if (!cards)
        say(rec, REC_KMS_NO_DEVICE, "no DRM device (no card node in " DRI_DIR ")");
    else if (refused[0])
        say(rec, REC_KMS_UNAVAILABLE, refused);
    else
        say(rec, REC_KMS_UNAVAILABLE, "no connected display on any KMS device (render-only "
            "or headless)");
    return NULL;
}

/* The CRTC's vblank counter and when its latest vblank was: CRTC_GET_SEQUENCE (64-bit, ns)
 * where the kernel has it, else a relative-0 drmWaitVBlank (a query, no wait). */
static bool vblank_now(int fd, uint32_t crtc_id, uint32_t crtc_index, uint64_t *seq,
                       int64_t *ns)
{
    uint64_t s;
    uint64_t t;
    if (drmCrtcGetSequence(fd, crtc_id, &s, &t) == 0) {
        *seq = s;
        *ns = (int64_t)t;
        return true;
    }
    drmVBlank vbl;
    memset(&vbl, 0, sizeof(vbl));
    vbl.request.type = DRM_VBLANK_RELATIVE;
    if (crtc_index == 1)
        vbl.request.type |= DRM_VBLANK_SECONDARY;
    else if (crtc_index > 1)
        vbl.request.type |= (crtc_index << DRM_VBLANK_HIGH_CRTC_SHIFT) & DRM_VBLANK_HIGH_CRTC_MASK;
    if (drmWaitVBlank(fd, &vbl) != 0)
        return false;
    *seq = vbl.reply.sequence;
    *ns = (int64_t)vbl.reply.tval_sec * 1000000000 + (int64_t)vbl.reply.tval_usec * 1000;
    return true;
}

void kms_tick(struct kms *k, struct rec_kms *rec)
{
    if (!k)
        return;
    for (unsigned i = 0; i < rec->count; i++) {
        struct rec_kms_output *o = &rec->outputs[i];
        uint64_t seq;
        int64_t ns;
        if (!vblank_now(k->fds[i], o->crtc_id, k->crtc_index[i], &seq, &ns))
            continue;
        if (!o->first_ns) {
            o->first_seq = seq;
            o->first_ns = ns;
        } else if (ns > o->first_ns && seq >= o->first_seq) {
            o->last_seq = seq;
            o->last_ns = ns;
            o->vblanks = 1;
        }
    }
}

void kms_close(struct kms *k)
{
    if (!k)
        return;
    for (unsigned i = 0; i < REC_KMS_OUTPUTS; i++)
        if (k->fds[i] >= 0)
            fscope_fd_close(k->fds[i]);
    free(k);
}

#else /* no libdrm */

struct kms *kms_open(struct rec_kms *rec)
{
    rec->state = REC_KMS_UNAVAILABLE;
    snprintf(rec->why, sizeof(rec->why), "framescope was built without libdrm");
    return NULL;
}

void kms_tick(struct kms *k, struct rec_kms *rec)
{
    (void)k;
    (void)rec;
}

void kms_close(struct kms *k)
{
    (void)k;
}

#endif
