/* The DRM usage-stats parser on text in the kernel's documented format
 * (Documentation/gpu/drm-usage-stats.rst), as amdgpu, i915 and xe write it: no DRM device is
 * needed. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "util/drm_fdinfo.h"

static const char amdgpu[] =
    "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t1053\ndrm-driver:\tamdgpu\n"
    "drm-pdev:\t0000:03:00.0\ndrm-client-id:\t42\ndrm-memory-vram:\t1048576 KiB\n"
    "drm-memory-gtt:\t 2048 KiB\ndrm-memory-cpu:\t0 KiB\namd-memory-visible-vram:\t0 KiB\n"
    "drm-engine-gfx:\t123456789 ns\ndrm-engine-compute:\t5000 ns\n";

static const char xe[] =
    "drm-driver:\txe\ndrm-client-id:\t7\ndrm-total-system:\t12 MiB\n"
    "drm-resident-system:\t10 MiB\ndrm-total-vram0:\t4096 MiB\ndrm-resident-vram0:\t3000 MiB\n"
    "drm-cycles-rcs:\t100\ndrm-engine-capacity-ccs:\t4\ndrm-engine-ccs:\t999 ns\n";

static const char not_drm[] = "pos:\t0\nflags:\t02\nmnt_id:\t1\nino:\t2\n";

static const char hostile[] =
    "drm-driver: a-driver-name-much-longer-than-sixteen\ndrm-engine-:\t5 ns\n"
    "drm-engine-x: not-a-number\ndrm-total-a-region-name-too-long-to-keep: 1 KiB\n"
    "drm-engine-e1: 1\ndrm-engine-e2: 1\ndrm-engine-e3: 1\ndrm-engine-e4: 1\n"
    "drm-engine-e5: 1\ndrm-engine-e6: 1\ndrm-engine-e7: 1\ndrm-engine-e8: 1\ndrm-engine-e9: 1\n"
    "drm-client-id";

int main(void)
{
    struct drm_fdinfo f;
    CHECK(drm_fdinfo_parse(amdgpu, &f));
    CHECK(strcmp(f.driver, "amdgpu") == 0 && f.client_id == 42);
    CHECK(f.engine_count == 2 && strcmp(f.engines[0].name, "gfx") == 0 &&
          f.engines[0].busy_ns == 123456789 && f.engines[0].capacity == 1);
    CHECK(f.engines[1].busy_ns == 5000);
    CHECK(f.region_count == 3 && strcmp(f.regions[0].name, "vram") == 0 &&
          f.regions[0].resident_bytes == 1048576ull * 1024 && f.regions[1].resident_bytes == 2048 * 1024);

    CHECK(drm_fdinfo_parse(xe, &f));
    CHECK(strcmp(f.driver, "xe") == 0 && f.client_id == 7);
    CHECK(f.region_count == 2 && f.regions[1].total_bytes == 4096ull << 20 &&
          f.regions[1].resident_bytes == 3000ull << 20);
    CHECK(f.engine_count == 1 && strcmp(f.engines[0].name, "ccs") == 0 &&
          f.engines[0].capacity == 4 && f.engines[0].busy_ns == 999);

    CHECK(!drm_fdinfo_parse(not_drm, &f));

    /* Long names are skipped, not cut; a value that is no number is not read; at most
     * DRM_FDINFO_ENGINES engines; a key with no value at the end is harmless. */
    CHECK(drm_fdinfo_parse(hostile, &f));
    CHECK(strlen(f.driver) < sizeof(f.driver));
    CHECK(f.region_count == 0);
    CHECK(f.engine_count == DRM_FDINFO_ENGINES);
    for (unsigned i = 0; i < f.engine_count; i++)
        CHECK(f.engines[i].name[0] && (strcmp(f.engines[i].name, "x") != 0 || f.engines[i].busy_ns == 0));
    puts("ok");
    return 0;
}
