/*
 * The compositor's presentation clock (wp_presentation.clock_id), related to
 * CLOCK_MONOTONIC so that presentation times compare with the frame log's.
 */
#include "present-wl-private.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

/* Presentation clock offset re-measured at most this often (MONOTONIC vs RAW drift under
 * NTP slew is at most 500 ppm, so 0.5 ms/s worst case). */
#define CLOCK_REMEASURE_NS 1000000000
#define CLOCK_SAMPLES 5

/*
 * Offset such that mono = other + offset, from the tightest of a few back-to-back
 * other/mono/other samples.  Returns false if either clock cannot be read.
 */
static bool measure_clock_offset(clockid_t other, int64_t *ret_offset_ns, int64_t *ret_mono_ns)
{
	int64_t best_width = INT64_MAX, best_offset = 0, best_mono = 0;

	for (int i = 0; i < CLOCK_SAMPLES; i++) {
		struct timespec a, m, b;
		int64_t width;

		if (clock_gettime(other, &a) != 0 || clock_gettime(CLOCK_MONOTONIC, &m) != 0 ||
		    clock_gettime(other, &b) != 0)
			return false;
		width = fscope_wl_timespec_ns(&b) - fscope_wl_timespec_ns(&a);
		if (width < 0)
			continue; /* the other clock stepped backwards (REALTIME); sample again */
		if (width < best_width) {
			best_width = width;
			best_mono = fscope_wl_timespec_ns(&m);
			best_offset = best_mono - (fscope_wl_timespec_ns(&a) + width / 2);
		}
	}
	if (best_width == INT64_MAX)
		return false;
	*ret_offset_ns = best_offset;
	*ret_mono_ns = best_mono;
	return true;
}

bool fscope_wl_clock_prepare(struct fscope_wl_clock *clock, char *why, size_t why_len)
{
	struct timespec ts;

	if (clock_gettime(clock->id, &ts) != 0) {
		fscope_wl_why(why, why_len, "presentation clock id %d cannot be read: %s",
			      (int)clock->id, strerror(errno));
		return false;
	}
	if (clock->id == CLOCK_MONOTONIC) {
		clock->offset_ns = 0;
		clock->measured_mono_ns = INT64_MAX; /* never re-measured */
		return true;
	}
	if (!measure_clock_offset(clock->id, &clock->offset_ns, &clock->measured_mono_ns)) {
		fscope_wl_why(why, why_len,
			      "cannot relate presentation clock id %d to CLOCK_MONOTONIC",
			      (int)clock->id);
		return false;
	}
	return true;
}

int64_t fscope_wl_clock_to_mono_ns(struct fscope_wl_clock *clock, int64_t clock_ns)
{
	if (clock->id != CLOCK_MONOTONIC) {
		int64_t now = fscope_wl_mono_ns();

		if (now - clock->measured_mono_ns >= CLOCK_REMEASURE_NS) {
			int64_t offset, mono;

			/* On failure keep the last offset; it was good a second ago. */
			if (measure_clock_offset(clock->id, &offset, &mono)) {
				clock->offset_ns = offset;
				clock->measured_mono_ns = mono;
			}
		}
	}
	return clock_ns + clock->offset_ns;
}
