#include "present-x11.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <xcb/present.h>
#include <xcb/randr.h>
#include <xcb/xcb.h>

#include "util/mode_refresh.h"
#include "util/private_fd.h"

#define PENDING_MAX 256  /* presents asked about and not completed */
#define DONE_MAX 256     /* finished records not yet drained */
#define NO_EVENTS_AFTER 120
#define QUIET_AFTER 30 /* presents with no completion before why() says so at teardown */
#define RECHECK_MS 1000 /* the window's place is read again at least this often */

enum state { SETTING_UP, READY, DEAD };

struct pending {
	uint64_t present_id;
	uint32_t serial;
	bool used, orphaned;
};

/* A RandR CRTC that shows something: where it is on the root window, and its output. */
struct crtc_area {
	int32_t x, y, width, height;
};

struct fscope_x11_tracker {
	char display[256];
	uint32_t window;
	xcb_connection_t *conn; /* ours; only the thread uses it */
	pthread_t thread;
	int wake_fd;
	_Atomic int state;
	char why[192]; /* written before state becomes DEAD */

	pthread_mutex_t lock; /* pending, done, counts: short, never held across a syscall */
	struct pending pending[PENDING_MAX];
	struct fscope_present_feedback done[DONE_MAX];
	unsigned done_head, done_count;
	struct fscope_wl_counts counts;
	uint64_t unmatched;
	bool silent; /* requests stopped: no completion ever came (why() says so) */
	uint64_t last_ust, last_msc;
	uint32_t refresh_ns;

	/* RandR's view (only the thread touches these): the outputs as recorded, the area each
	 * shows on the root window, and the one the window overlaps most, as the server picks a
	 * CRTC for Present (-1: none, or no RandR). */
	xcb_window_t root;
	uint8_t randr_event; /* RandR's first event code; 0: no RandR */
	struct fscope_present_sink sink; /* the creator's: told the outputs as they are read */
	struct fscope_output_info outputs[FSCOPE_PRESENT_MAX_OUTPUTS];
	struct crtc_area areas[FSCOPE_PRESENT_MAX_OUTPUTS];
	unsigned output_count;
	int window_output;
};

static void die(struct fscope_x11_tracker *t, const char *why)
{
	pthread_mutex_lock(&t->lock);
	if (atomic_load(&t->state) != DEAD)
		snprintf(t->why, sizeof(t->why), "%s", why);
	pthread_mutex_unlock(&t->lock);
	atomic_store(&t->state, DEAD);
}

/* Reads the CRTCs that show something, each named by its (first) output and given its mode's
 * size and refresh, and gives them to the sink (the run's outputs). Keeps the previous list
 * when the server does not answer. */
static void read_outputs(struct fscope_x11_tracker *t)
{
	xcb_randr_get_screen_resources_current_reply_t *res =
		xcb_randr_get_screen_resources_current_reply(
			t->conn, xcb_randr_get_screen_resources_current(t->conn, t->root), NULL);
	if (!res)
		return;
	const xcb_randr_crtc_t *crtcs = xcb_randr_get_screen_resources_current_crtcs(res);
	int ncrtc = xcb_randr_get_screen_resources_current_crtcs_length(res);
	const xcb_randr_mode_info_t *modes = xcb_randr_get_screen_resources_current_modes(res);
	int nmode = xcb_randr_get_screen_resources_current_modes_length(res);
	unsigned n = 0;
	for (int i = 0; i < ncrtc && n < FSCOPE_PRESENT_MAX_OUTPUTS; i++) {
		xcb_randr_get_crtc_info_reply_t *crtc = xcb_randr_get_crtc_info_reply(
			t->conn, xcb_randr_get_crtc_info(t->conn, crtcs[i], res->config_timestamp), NULL);
		if (!crtc || !crtc->mode || !crtc->num_outputs) {
			free(crtc);
			continue;
		}
		struct fscope_output_info *o = &t->outputs[n];
		*o = (struct fscope_output_info){ .width = crtc->width, .height = crtc->height, .scale = 1 };
		for (int m = 0; m < nmode; m++)
			if (modes[m].id == crtc->mode)
				o->refresh_mhz = fscope_mode_refresh_mhz(
					modes[m].dot_clock, modes[m].htotal, modes[m].vtotal,
					modes[m].mode_flags & XCB_RANDR_MODE_FLAG_INTERLACE,
					modes[m].mode_flags & XCB_RANDR_MODE_FLAG_DOUBLE_SCAN);
		xcb_randr_get_output_info_reply_t *out = xcb_randr_get_output_info_reply(
			t->conn, xcb_randr_get_output_info(t->conn, xcb_randr_get_crtc_info_outputs(crtc)[0],
							  res->config_timestamp), NULL);
		if (out) /* not NUL-terminated; snprintf cuts what does not fit */
			snprintf(o->name, sizeof(o->name), "%.*s",
				 xcb_randr_get_output_info_name_length(out),
				 (const char *)xcb_randr_get_output_info_name(out));
		else
			snprintf(o->name, sizeof(o->name), "crtc-%u", crtcs[i]);
		free(out);
		t->areas[n] = (struct crtc_area){ crtc->x, crtc->y, crtc->width, crtc->height };
		n++;
		free(crtc);
	}
	free(res);
	t->output_count = n;
	if (t->sink.outputs)
		t->sink.outputs(t->sink.ctx, t->outputs, n);
}

static int64_t overlap(int32_t a0, int32_t alen, int32_t b0, int32_t blen)
{
	int64_t lo = a0 > b0 ? a0 : b0;
	int64_t hi = (int64_t)a0 + alen < (int64_t)b0 + blen ? (int64_t)a0 + alen : (int64_t)b0 + blen;
	return hi > lo ? hi - lo : 0;
}

/* Where the window is on the root window now, and the output it overlaps most. */
static void place_window(struct fscope_x11_tracker *t)
{
	xcb_get_geometry_reply_t *g = xcb_get_geometry_reply(
		t->conn, xcb_get_geometry(t->conn, t->window), NULL);
	xcb_translate_coordinates_reply_t *at = xcb_translate_coordinates_reply(
		t->conn, xcb_translate_coordinates(t->conn, t->window, t->root, 0, 0), NULL);
	if (g && at) {
		int best = -1;
		int64_t best_area = 0;
		for (unsigned i = 0; i < t->output_count; i++) {
			const struct crtc_area *a = &t->areas[i];
			int64_t area = overlap(at->dst_x, g->width, a->x, a->width) *
				       overlap(at->dst_y, g->height, a->y, a->height);
			if (area > best_area) {
				best_area = area;
				best = (int)i;
			}
		}
		t->window_output = best;
	}
	free(g);
	free(at);
}

/* RandR on our connection: its outputs, and notice when they or the window change. Without
 * RandR the outputs stay unknown and the refresh is the measured one. */
static void setup_outputs(struct fscope_x11_tracker *t)
{
	t->window_output = -1;
	xcb_get_geometry_reply_t *g = xcb_get_geometry_reply(
		t->conn, xcb_get_geometry(t->conn, t->window), NULL);
	if (!g)
		return;
	t->root = g->root;
	free(g);
	/* The window's moves (a window manager sends a synthetic ConfigureNotify in root
	 * coordinates) and reparenting; our event mask on it is ours alone. */
	uint32_t mask = XCB_EVENT_MASK_STRUCTURE_NOTIFY;
	xcb_change_window_attributes(t->conn, t->window, XCB_CW_EVENT_MASK, &mask);
	const xcb_query_extension_reply_t *ext = xcb_get_extension_data(t->conn, &xcb_randr_id);
	if (!ext || !ext->present)
		return;
	xcb_randr_query_version_reply_t *v = xcb_randr_query_version_reply(
		t->conn, xcb_randr_query_version(t->conn, 1, 3), NULL);
	bool usable = v && (v->major_version > 1 || v->minor_version >= 3);
	free(v);
	if (!usable)
		return; /* GetScreenResourcesCurrent is RandR 1.3 */
	t->randr_event = ext->first_event;
	xcb_randr_select_input(t->conn, t->root, XCB_RANDR_NOTIFY_MASK_SCREEN_CHANGE |
						 XCB_RANDR_NOTIFY_MASK_CRTC_CHANGE |
						 XCB_RANDR_NOTIFY_MASK_OUTPUT_CHANGE);
	read_outputs(t);
	place_window(t);
}

static bool setup(struct fscope_x11_tracker *t)
{
	char why[192];
	t->conn = xcb_connect(t->display[0] ? t->display : NULL, NULL);
	if (xcb_connection_has_error(t->conn)) {
		snprintf(why, sizeof(why), "cannot connect to the X display '%.64s' (our own connection)",
			 t->display);
		die(t, why);
		return false;
	}
	const xcb_query_extension_reply_t *ext = xcb_get_extension_data(t->conn, &xcb_present_id);
	if (!ext || !ext->present) {
		die(t, "the X server has no Present extension: no presentation feedback");
		return false;
	}
	xcb_present_query_version_reply_t *v = xcb_present_query_version_reply(
		t->conn, xcb_present_query_version(t->conn, 1, 0), NULL);
	free(v);
	uint32_t eid = xcb_generate_id(t->conn);
	xcb_generic_error_t *e = xcb_request_check(t->conn, xcb_present_select_input_checked(
		t->conn, eid, t->window, XCB_PRESENT_EVENT_MASK_COMPLETE_NOTIFY));
	if (e) {
		snprintf(why, sizeof(why), "PresentSelectInput on window 0x%x failed (X error %u): "
			 "the window is gone or not a window", t->window, e->error_code);
		free(e);
		die(t, why);
		return false;
	}
	setup_outputs(t);
	atomic_store(&t->state, READY);
	return true;
}

/* A finished present leaves pending for its outcome. Lock held. */
static void count_outcome(struct fscope_x11_tracker *t, const struct fscope_present_feedback *fb)
{
	if (fb->outcome == FSCOPE_PRESENT_DISCARDED)
		t->counts.discarded++;
	else
		t->counts.presented++;
}

/* One completion: matched to its pending present by serial. Called with the lock held. */
static void complete(struct fscope_x11_tracker *t, const xcb_present_complete_notify_event_t *ev)
{
	struct pending *p = NULL;
	for (unsigned i = 0; i < PENDING_MAX && !p; i++)
		if (t->pending[i].used && t->pending[i].serial == ev->serial)
			p = &t->pending[i];
	if (!p) {
		t->unmatched++;
		return;
	}
	p->used = false;
	if (p->orphaned) {
		t->counts.pending--; /* counted in orphaned when its present failed */
		return;
	}
	bool skipped = ev->mode == XCB_PRESENT_COMPLETE_MODE_SKIP;
	struct fscope_present_feedback fb = {
		.present_id = p->present_id,
		.outcome = skipped ? FSCOPE_PRESENT_DISCARDED : FSCOPE_PRESENT_PRESENTED,
		.seq = ev->msc,
		.output_index = t->window_output,
	};
	if (t->window_output >= 0)
		fb.output_refresh_mhz = t->outputs[t->window_output].refresh_mhz;
	if (!skipped) {
		fb.presented_mono_ns = (int64_t)ev->ust * 1000;
		if (t->last_msc && ev->msc > t->last_msc && ev->ust > t->last_ust)
			t->refresh_ns = (uint32_t)((ev->ust - t->last_ust) * 1000 /
						   (ev->msc - t->last_msc));
		t->last_ust = ev->ust;
		t->last_msc = ev->msc;
		fb.refresh_ns = t->refresh_ns;
		/* Present shows a pixmap at an MSC (a vblank); a flip is the pixmap itself. */
		fb.flags = FSCOPE_PRESENT_FLAG_VSYNC |
			   (ev->mode == XCB_PRESENT_COMPLETE_MODE_FLIP ? FSCOPE_PRESENT_FLAG_ZERO_COPY : 0);
	}
	if (t->done_count == DONE_MAX) {
		t->counts.pending--;
		count_outcome(t, &fb);
		t->counts.lost++;
		return;
	}
	/* Counted when drained: until then the frame log has it pending, and so does the tally,
	 * whenever either is read. */
	t->done[(t->done_head + t->done_count++) % DONE_MAX] = fb;
}

/* One event from the server: a completion, or a change of the outputs or of the window's
 * place (dirty: read again once the queue is empty). */
static void handle_event(struct fscope_x11_tracker *t, const xcb_generic_event_t *e,
			 bool *outputs_dirty, bool *window_dirty)
{
	uint8_t type = e->response_type & 0x7f;
	if (type == XCB_GE_GENERIC &&
	    ((const xcb_ge_generic_event_t *)e)->event_type == XCB_PRESENT_COMPLETE_NOTIFY) {
		const xcb_present_complete_notify_event_t *cn = (const void *)e;
		if (cn->kind == XCB_PRESENT_COMPLETE_KIND_PIXMAP && cn->window == t->window) {
			pthread_mutex_lock(&t->lock);
			complete(t, cn);
			pthread_mutex_unlock(&t->lock);
		}
	} else if (t->randr_event && (type == t->randr_event + XCB_RANDR_SCREEN_CHANGE_NOTIFY ||
				      type == t->randr_event + XCB_RANDR_NOTIFY)) {
		*outputs_dirty = true;
	} else if (type == XCB_CONFIGURE_NOTIFY || type == XCB_REPARENT_NOTIFY ||
		   type == XCB_MAP_NOTIFY) {
		*window_dirty = true;
	}
}

static void *thread_main(void *arg)
{
	struct fscope_x11_tracker *t = arg;
	if (!setup(t))
		return NULL;
	struct pollfd fds[2] = {
		{ .fd = xcb_get_file_descriptor(t->conn), .events = POLLIN },
		{ .fd = t->wake_fd, .events = POLLIN },
	};
	bool outputs_dirty = false, window_dirty = false;
	for (;;) {
		/* Events first: the round trips below (and set-up's) leave what came meanwhile in
		 * xcb's queue, where poll() cannot see it. */
		xcb_generic_event_t *e;
		while ((e = xcb_poll_for_event(t->conn))) {
			handle_event(t, e, &outputs_dirty, &window_dirty);
			free(e);
		}
		if (xcb_connection_has_error(t->conn)) {
			die(t, "our connection to the X server broke (the server went away)");
			break;
		}
		if (t->randr_event && (outputs_dirty || window_dirty)) {
			if (outputs_dirty)
				read_outputs(t);
			place_window(t);
			outputs_dirty = window_dirty = false;
			continue;
		}
		/* A window manager moves its frame, not the window, and need not say so: with
		 * nothing heard for a while, look again. */
		int n = poll(fds, 2, t->randr_event ? RECHECK_MS : -1);
		if (n < 0 && errno != EINTR)
			break;
		if (fds[1].revents)
			break;
		window_dirty = n == 0;
	}
	return NULL;
}

struct fscope_x11_tracker *fscope_x11_tracker_create(const char *display, uint32_t window,
						     const struct fscope_present_sink *sink,
						     char *why, size_t why_len)
{
	if (!display)
		display = secure_getenv("DISPLAY");
	if (!display || !*display) {
		snprintf(why, why_len, "no DISPLAY: cannot open our own connection to the X server");
		return NULL;
	}
	struct fscope_x11_tracker *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(why, why_len, "out of memory");
		return NULL;
	}
	snprintf(t->display, sizeof(t->display), "%s", display);
	t->window = window;
	if (sink)
		t->sink = *sink;
	pthread_mutex_init(&t->lock, NULL);
	t->wake_fd = fscope_fd_high(eventfd(0, EFD_CLOEXEC));
	/* Signals stay the app's business: the thread starts with all of them blocked. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = t->wake_fd < 0 ? errno : pthread_create(&t->thread, NULL, thread_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		snprintf(why, why_len, "cannot start the tracker's thread: %s", strerror(e));
		fscope_fd_close(t->wake_fd);
		free(t);
		return NULL;
	}
	pthread_setname_np(t->thread, "fscope-x11");
	return t;
}

/* At least this many presents asked about and not one completion of any kind. Lock held. */
static bool never_completed(const struct fscope_x11_tracker *t, uint64_t at_least)
{
	return t->counts.requested >= at_least && !t->counts.presented && !t->counts.discarded &&
	       !t->unmatched;
}

enum fscope_wl_request fscope_x11_tracker_request(struct fscope_x11_tracker *t,
						  uint64_t present_id, uint64_t serial)
{
	if (!t)
		return FSCOPE_WL_REQUEST_FAILED;
	int state = atomic_load(&t->state);
	pthread_mutex_lock(&t->lock);
	enum fscope_wl_request r;
	if (state != READY || t->silent) {
		t->counts.not_ready++;
		r = FSCOPE_WL_NOT_READY;
	} else if (never_completed(t, NO_EVENTS_AFTER)) {
		/* This driver does not present through Present: stop asking (why() says so). */
		t->silent = true;
		t->counts.not_ready++;
		r = FSCOPE_WL_NOT_READY;
	} else {
		struct pending *free_slot = NULL;
		for (unsigned i = 0; i < PENDING_MAX && !free_slot; i++)
			if (!t->pending[i].used)
				free_slot = &t->pending[i];
		if (!free_slot) {
			t->counts.failed++;
			r = FSCOPE_WL_REQUEST_FAILED;
		} else {
			*free_slot = (struct pending){ .present_id = present_id,
						       .serial = (uint32_t)serial, .used = true };
			t->counts.requested++;
			t->counts.pending++;
			r = FSCOPE_WL_REQUESTED;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return r;
}

void fscope_x11_tracker_present_failed(struct fscope_x11_tracker *t, uint64_t present_id)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < PENDING_MAX; i++) {
		struct pending *p = &t->pending[i];
		if (p->used && !p->orphaned && p->present_id == present_id) {
			/* Nothing was presented: its serial will never complete. */
			p->used = false;
			t->counts.pending--;
			t->counts.orphaned++;
		}
	}
	pthread_mutex_unlock(&t->lock);
}

size_t fscope_x11_tracker_drain(struct fscope_x11_tracker *t,
				struct fscope_present_feedback *out, size_t max)
{
	if (!t)
		return 0;
	size_t n = 0;
	pthread_mutex_lock(&t->lock);
	while (n < max && t->done_count) {
		out[n] = t->done[t->done_head];
		t->counts.pending--;
		count_outcome(t, &out[n++]);
		t->done_head = (t->done_head + 1) % DONE_MAX;
		t->done_count--;
	}
	pthread_mutex_unlock(&t->lock);
	return n;
}

void fscope_x11_tracker_counts(const struct fscope_x11_tracker *t, struct fscope_wl_counts *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!t)
		return;
	pthread_mutex_lock((pthread_mutex_t *)&t->lock);
	*ret = t->counts;
	pthread_mutex_unlock((pthread_mutex_t *)&t->lock);
}

uint64_t fscope_x11_tracker_unmatched(const struct fscope_x11_tracker *t)
{
	if (!t)
		return 0;
	pthread_mutex_lock((pthread_mutex_t *)&t->lock);
	uint64_t n = t->unmatched;
	pthread_mutex_unlock((pthread_mutex_t *)&t->lock);
	return n;
}

bool fscope_x11_tracker_ready(const struct fscope_x11_tracker *t)
{
	return t && atomic_load(&t->state) == READY && !t->silent;
}

bool fscope_x11_tracker_why(const struct fscope_x11_tracker *t, char *buf, size_t len)
{
	if (!t) {
		snprintf(buf, len, "no tracker");
		return true;
	}
	int state = atomic_load(&t->state);
	pthread_mutex_lock((pthread_mutex_t *)&t->lock);
	/* Stopped asking, or (at teardown, before that limit) enough presents that some should
	 * have completed and none did. */
	bool none = state == READY && (t->silent || never_completed(t, QUIET_AFTER));
	bool not_tracking = state != READY || none;
	if (state == SETTING_UP)
		snprintf(buf, len, "the X11 presentation tracker was still being set up");
	else if (none)
		snprintf(buf, len, "no PresentCompleteNotify for the window in %llu presents: the "
			 "driver does not present through the Present extension (Mesa's software "
			 "path, lavapipe's, uses PutImage)", (unsigned long long)t->counts.requested);
	else
		snprintf(buf, len, "%s", not_tracking ? t->why : "");
	pthread_mutex_unlock((pthread_mutex_t *)&t->lock);
	return not_tracking;
}

void fscope_x11_tracker_destroy_with_counts(struct fscope_x11_tracker *t,
					    struct fscope_wl_counts *ret)
{
	if (!t) {
		if (ret)
			memset(ret, 0, sizeof(*ret));
		return;
	}
	uint64_t one = 1;
	if (write(t->wake_fd, &one, sizeof(one)) != sizeof(one))
		(void)0; /* an eventfd write fails only on overflow */
	pthread_join(t->thread, NULL);
	if (ret)
		fscope_x11_tracker_counts(t, ret);
	if (t->conn)
		xcb_disconnect(t->conn);
	fscope_fd_close(t->wake_fd);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* ---- the frame log's interface ---- */

static enum fscope_wl_request ops_request(void *t, uint64_t present_id, uint64_t serial)
{
	return fscope_x11_tracker_request(t, present_id, serial);
}

static void ops_present_failed(void *t, uint64_t present_id)
{
	fscope_x11_tracker_present_failed(t, present_id);
}

static size_t ops_drain(void *t, struct fscope_present_feedback *out, size_t max)
{
	return fscope_x11_tracker_drain(t, out, max);
}

static void ops_counts(const void *t, struct fscope_wl_counts *ret)
{
	fscope_x11_tracker_counts(t, ret);
}

static bool ops_why(const void *t, char *buf, size_t len)
{
	return fscope_x11_tracker_why(t, buf, len);
}

static void ops_destroy(void *t, struct fscope_wl_counts *ret)
{
	fscope_x11_tracker_destroy_with_counts(t, ret);
}

const struct fscope_present_ops fscope_x11_present_ops = {
	ops_request, ops_present_failed, ops_drain, ops_counts, ops_why, ops_destroy,
};
