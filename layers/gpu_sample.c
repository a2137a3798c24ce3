/* GPU timing sampled by whole frames (FRAMESCOPE_GPU_SAMPLE): which submissions are timed. */
#include <pthread.h>

#include "gpu.h"
#include "record/clock.h"
#include "record/meta.h"
#include "util/log.h"
#include "record/frame.h"

/* Sampling (FRAMESCOPE_GPU_SAMPLE): every timestamp pair costs the app frame time however
 * cheap our own work is (1.5 us a submission on the H200, measured with the pair written in
 * the app's own command buffers; on lavapipe each extra command buffer is a rasterizer batch).
 * So whole frames are timed, SAMPLE_WINDOW_FRAMES in a row, whenever the budget of timed
 * submissions a second allows: a run of timed frames measures GPU busy exactly inside it,
 * and the analysis takes the frames outside every run as unmeasured, never as an idle GPU.
 * Without presents (a compute app, a GL app without a swapchain) a window is
 * SAMPLE_PRESENTLESS_NS of submissions instead. */
#define SAMPLE_WINDOW_FRAMES 6
#define SAMPLE_PRESENTLESS_NS 100000000 /* no present this long: windows by time */
#define SAMPLE_TAIL_FRAMES 3 /* auto: frames after a window that still carry its cost */
#define SAMPLE_WINDOW_NS 25000000
/* auto past GPU_SAMPLE_DEFAULT, where windows follow each other with no frame between them:
 * after SAMPLE_PROBE_WINDOWS in a row, SAMPLE_TAIL_FRAMES + SAMPLE_PROBE_FRAMES frames go
 * untimed, so that the untimed frames' time, and with it the cost, is still measured (and the
 * analysis still compares timed and untimed frames). 96% of frames timed. */
#define SAMPLE_PROBE_WINDOWS 32
#define SAMPLE_PROBE_FRAMES 6
/* auto: how fast the allowed rate may rise, per second (e-fold): from 240 to 5,000 timed
 * submissions a second in about 3 s. It falls at once. */
#define SAMPLE_RISE_PER_S 1.0

/* ---- sampling ------------------------------------------------------------------------------ */

void gpu_sample_init(struct device_data *dev)
{
    pthread_mutex_init(&dev->sample_lock, NULL);
    dev->sample_refill_ticks = fscope_now();
    /* One window to start with (auto): a burst of the whole quarter second's budget at
     * start-up would time tens of frames before their cost is known. */
    dev->sample_tokens = layer_config.gpu_sample_auto ? SAMPLE_WINDOW_FRAMES
                                                      : layer_config.gpu_sample_rate / 4.0;
    dev->sample_rate = layer_config.gpu_sample_rate;
    atomic_store(&dev->sample_open, layer_config.gpu_sample_rate == 0);
}

/* Under sample_lock, at a present (FRAMESCOPE_GPU_SAMPLE=auto): the frame that ends now was
 * timed or not (open); its time since the last present goes into the smoothed mean of frames
 * in or just after a window (SAMPLE_TAIL_FRAMES after it: with frames in flight, what timing
 * costs the device shows in the frames presented after it), or of the others. A timed frame
 * costs the difference times (window + tail) / window, in either direction: a timed frame
 * that runs faster is the layer changing the app as much as one that runs slower. The rate
 * becomes what keeps that within GPU_SAMPLE_COST_SHARE of the app's time, between one window
 * a second and the configured ceiling. On a GPU where a timestamp costs a microsecond nothing changes; on
 * lavapipe, where each one flushes the rasterizer and a timed frame takes half as long
 * again, the rate drops. */
static void sample_adapt(struct device_data *dev, uint64_t now, bool open)
{
    uint64_t last = dev->sample_last_present;
    dev->sample_last_present = now;
    if (!layer_config.gpu_sample_auto || !last)
        return;
    double dt = fscope_ticks_to_ns(now - last);
    if (dt <= 0 || dt > 250e6)
        return; /* a pause (loading, a debugger): no frame's cost */
    /* A timed frame is judged against untimed ones once there are some: the first frames,
     * timed while the budget is full, are the app's start-up ones. One slow timed frame is
     * taken as four untimed ones at most, so a hitch in a window cannot close the windows. */
    dev->sample_since_window = open ? 0 : dev->sample_since_window + 1;
    if (open || dev->sample_since_window <= SAMPLE_TAIL_FRAMES) {
        if (dev->sample_out_ns <= 0)
            return;
        if (dt > 4 * dev->sample_out_ns)
            dt = 4 * dev->sample_out_ns;
        /* Timed frames are the many once the rate passes the default: averaged over more. */
        double weight = dev->sample_rate > GPU_SAMPLE_DEFAULT ? 64 : 16;
        dev->sample_in_ns = dev->sample_in_ns > 0 ? dev->sample_in_ns + (dt - dev->sample_in_ns) / weight : dt;
    } else {
        dev->sample_out_ns = dev->sample_out_ns > 0 ? dev->sample_out_ns + (dt - dev->sample_out_ns) / 32 : dt;
    }
    /* Until the cost is measured, the default; once it is, whatever it allows. */
    bool measured = dev->sample_in_ns > 0 && dev->sample_out_ns > 0;
    double ceiling = measured ? GPU_SAMPLE_MAX : layer_config.gpu_sample_rate;
    double per_frame = dev->sample_per_frame > 1 ? dev->sample_per_frame : 1;
    double floor = SAMPLE_WINDOW_FRAMES * per_frame;
    double change = dev->sample_in_ns - dev->sample_out_ns;
    double cost = (change < 0 ? -change : change) *
                  (SAMPLE_WINDOW_FRAMES + SAMPLE_TAIL_FRAMES) / SAMPLE_WINDOW_FRAMES;
    double rate = ceiling;
    if (measured && cost > 0)
        rate = GPU_SAMPLE_COST_SHARE * 1e9 / cost * per_frame;
    rate = rate < floor ? (floor < ceiling ? floor : ceiling) : rate > ceiling ? ceiling : rate;
    /* Down at once, up by SAMPLE_RISE_PER_S at most: frame times here are noisy, and one
     * quiet stretch must not open the budget wide again. */
    if (measured && rate > dev->sample_rate) {
        double up = dev->sample_rate * (1 + SAMPLE_RISE_PER_S * dt / 1e9);
        rate = rate < up ? rate : up;
    }
    dev->sample_rate = rate;
    atomic_store_explicit(&gpu_stats.sample_in_ns, (uint64_t)dev->sample_in_ns, memory_order_relaxed);
    atomic_store_explicit(&gpu_stats.sample_out_ns, (uint64_t)dev->sample_out_ns, memory_order_relaxed);
    atomic_store_explicit(&gpu_stats.sample_rate, (uint64_t)dev->sample_rate, memory_order_relaxed);
}

/* Under sample_lock: the budget grows by the time passed, up to a quarter second's worth or a
 * window's, whichever is more (a window must always fit). */
static void sample_refill(struct device_data *dev, uint64_t now)
{
    double rate = dev->sample_rate;
    double passed = fscope_ticks_to_ns(now - dev->sample_refill_ticks) / 1e9;
    dev->sample_refill_ticks = now;
    double cap = rate / 4;
    double window = SAMPLE_WINDOW_FRAMES * (dev->sample_per_frame > 1 ? dev->sample_per_frame : 1);
    if (cap < window)
        cap = window;
    dev->sample_tokens += passed * rate;
    if (dev->sample_tokens > cap)
        dev->sample_tokens = cap;
}

/* Under sample_lock, at a present that would open the next window (*next) after a window
 * (open) or after an untimed frame: past GPU_SAMPLE_DEFAULT, a probe of untimed frames after
 * SAMPLE_PROBE_WINDOWS windows in a row. Below it the budget itself leaves frames untimed. */
static void sample_probe(struct device_data *dev, bool open, bool *next)
{
    if (!layer_config.gpu_sample_auto)
        return;
    if (!open) {
        dev->sample_run_windows = 0;
        if (dev->sample_probe_left) {
            dev->sample_probe_left--;
            *next = false;
        }
        return;
    }
    if (*next && dev->sample_rate > GPU_SAMPLE_DEFAULT &&
        ++dev->sample_run_windows >= SAMPLE_PROBE_WINDOWS) {
        dev->sample_run_windows = 0;
        /* this present's frame is the first untimed one */
        dev->sample_probe_left = SAMPLE_TAIL_FRAMES + SAMPLE_PROBE_FRAMES - 1;
        atomic_fetch_add_explicit(&gpu_stats.sample_probes, 1, memory_order_relaxed);
        *next = false;
    }
}

void gpu_sample_presented(struct device_data *dev, uint64_t now)
{
    if (!layer_config.gpu_sample_rate || !layer_config.gpu_timing)
        return;
    atomic_store_explicit(&dev->last_present_ticks, now, memory_order_relaxed);
    if (pthread_mutex_trylock(&dev->sample_lock) != 0)
        return; /* another present decides */
    sample_refill(dev, now);
    double n = (double)atomic_exchange_explicit(&dev->sample_submits, 0, memory_order_relaxed);
    dev->sample_per_frame = dev->sample_per_frame > 0 ? 0.875 * dev->sample_per_frame + 0.125 * n
                                                      : n;
    bool open = atomic_load_explicit(&dev->sample_open, memory_order_relaxed);
    sample_adapt(dev, now, open);
    if (open) {
        dev->sample_tokens -= n;
        if (dev->sample_frames_left > 1) {
            dev->sample_frames_left--;
            pthread_mutex_unlock(&dev->sample_lock);
            return;
        }
    }
    /* A window ends here, or none was open: the next one follows at once when the budget
     * holds it, so an app within the budget is timed in every frame. */
    double per_frame = dev->sample_per_frame > 1 ? dev->sample_per_frame : 1;
    bool next = dev->sample_tokens >= SAMPLE_WINDOW_FRAMES * per_frame;
    sample_probe(dev, open, &next);
    dev->sample_frames_left = next ? SAMPLE_WINDOW_FRAMES : 0;
    if (next && !open)
        atomic_fetch_add_explicit(&gpu_stats.sample_windows, 1, memory_order_relaxed);
    if (next != open)
        atomic_store_explicit(&dev->sample_open, next, memory_order_relaxed);
    pthread_mutex_unlock(&dev->sample_lock);
}

bool gpu_sample_may_time(struct device_data *dev)
{
    if (!layer_config.gpu_sample_rate || atomic_load_explicit(&dev->sample_open, memory_order_relaxed))
        return true;
    /* Without presents, windows open at a submission: what is recorded cannot be told apart. */
    uint64_t last = atomic_load_explicit(&dev->last_present_ticks, memory_order_relaxed);
    return !last || fscope_now() - last >= fscope_ns_to_ticks(SAMPLE_PRESENTLESS_NS);
}

/* Where the app presents nothing but marks its frames (fscope_frame_mark, offscreen renderers
 * and benchmarks), the first submission after a mark takes it for a present: windows are
 * whole frames and the budget adapts as with presents. Two loads a submission; several marks
 * between two submissions count as one frame, which only makes that frame look long. */
static void sample_take_marks(struct device_data *dev)
{
    if (atomic_load_explicit(&dev->presents_seen, memory_order_relaxed))
        return;
    uint64_t marks = atomic_load_explicit(&fscope_frame_marks, memory_order_acquire);
    uint64_t seen = atomic_load_explicit(&dev->marks_seen, memory_order_relaxed);
    if (marks == seen ||
        !atomic_compare_exchange_strong_explicit(&dev->marks_seen, &seen, marks,
                                                 memory_order_relaxed, memory_order_relaxed))
        return;
    gpu_sample_presented(dev, atomic_load_explicit(&fscope_frame_mark_ticks,
                                                   memory_order_relaxed));
}

/* Whether a submission now is timed under the budget. One relaxed load while frames are
 * presented; without presents, a window of SAMPLE_WINDOW_NS opens when the budget holds a
 * quarter second's worth, and each submission in it spends one. */
bool gpu_sample_admits(struct device_data *dev)
{
    if (!layer_config.gpu_sample_rate)
        return true;
    sample_take_marks(dev);
    atomic_fetch_add_explicit(&dev->sample_submits, 1, memory_order_relaxed);
    if (atomic_load_explicit(&dev->sample_open, memory_order_relaxed))
        return true;
    uint64_t now = fscope_now();
    uint64_t last = atomic_load_explicit(&dev->last_present_ticks, memory_order_relaxed);
    if (last && now - last < fscope_ns_to_ticks(SAMPLE_PRESENTLESS_NS))
        return false;
    if (pthread_mutex_trylock(&dev->sample_lock) != 0)
        return false;
    sample_refill(dev, now);
    bool admit = now < dev->sample_until_ticks && dev->sample_tokens >= 1;
    /* A window opens once the budget holds a quarter second's worth; the first one (auto,
     * which starts with one window's worth) at once: the first frames, submitted before any
     * present, are timed from the start. */
    double opens = layer_config.gpu_sample_rate / 4.0;
    if (layer_config.gpu_sample_auto && !dev->sample_started)
        opens = 1;
    if (!admit && dev->sample_tokens >= opens) {
        dev->sample_started = true;
        dev->sample_until_ticks = now + fscope_ns_to_ticks(SAMPLE_WINDOW_NS);
        atomic_fetch_add_explicit(&gpu_stats.sample_windows, 1, memory_order_relaxed);
        admit = true;
    }
    if (admit)
        dev->sample_tokens -= 1;
    pthread_mutex_unlock(&dev->sample_lock);
    return admit;
}
