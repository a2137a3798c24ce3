#!/usr/bin/env python3
"""The kernel's view of the thread that closes frames: its CPU part split into busy, starved
(runnable with no CPU) and blocked outside the Vulkan waits, on demo modes built for each.

usage: test_kernel.py TEST BUILD_DIR DEMO"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import SKIP, Weston, check, check_capture_consistent, main, ns, run_app


def mean_ms(rows, column):
    values = [ns(r[column]) for r in rows if r[column]]
    return sum(values) / len(values) / 1e6 if values else 0.0


def kernel_run(build, argv, extra_env=None):
    with Weston() as w:
        r = run_app(argv, w, build, extra_env=extra_env)
    check(r.rc == 0, r.stderr[-2000:])
    summary, rows, _, _ = check_capture_consistent(r)
    return r, summary, rows


def test_lock_wait(build, demo):
    """A frame that sleeps on a mutex a worker holds for 4 ms: that sleep is blocking outside
    Vulkan, not CPU work (a sleep's length does not depend on the machine)."""
    hold_ms = 4.0
    r, summary, rows = kernel_run(build, [demo, "--quiet", "--frames", "60", "--present-mode",
                                          "mailbox", "--cpu-ms", "0.5", "--lock-wait-ms",
                                          str(hold_ms)])
    kernel = summary["kernel"]
    check(kernel["state"] == "on" and kernel["frames"] >= 55, f"kernel view missing: {kernel}")
    blocked = mean_ms(rows, "cpu_blocked_ms")
    check(blocked >= 0.8 * hold_ms, f"blocked outside Vulkan {blocked:.3f} ms, the lock is "
          f"held {hold_ms} ms")
    check(blocked > 2 * mean_ms(rows, "cpu_busy_ms"), "the lock wait was counted as CPU work")
    check("blocked outside Vulkan" in summary["verdict"]["reason"], summary["verdict"]["reason"])
    check(abs(kernel["cpu_blocked_ms"] - blocked) < 1e-3 * max(1, blocked),
          f"summary.json {kernel['cpu_blocked_ms']} != frames.csv {blocked}")
    print(f"lock held {hold_ms} ms a frame: blocked outside Vulkan {blocked:.3f} ms, busy "
          f"{mean_ms(rows, 'cpu_busy_ms'):.3f} ms")


def test_starved(build, demo):
    """A thread spinning on the same CPU as the render thread (taskset): the render thread is
    runnable without a CPU for much of its CPU part; without the hog it is not."""
    taskset = shutil.which("taskset")
    if not taskset:
        print("no taskset")
        sys.exit(SKIP)
    args = ["--quiet", "--frames", "60", "--present-mode", "mailbox", "--cpu-ms", "3"]
    _, _, alone = kernel_run(build, [taskset, "-c", "0", demo] + args)
    _, summary, hogged = kernel_run(build, [taskset, "-c", "0", demo, "--cpu-hog"] + args)
    share = lambda rows: mean_ms(rows, "cpu_starved_ms") / max(mean_ms(rows, "cpu_ms"), 1e-9)
    check(share(hogged) >= 0.25, f"starved {share(hogged):.1%} of the CPU part with a hog")
    # The demo's own driver threads share that CPU too: the hog adds to what they take.
    check(share(hogged) >= share(alone) + 0.2, f"starved {share(hogged):.1%} with a hog, "
          f"{share(alone):.1%} without")
    check("starved" in summary["verdict"]["reason"], summary["verdict"]["reason"])
    print(f"starved: {share(alone):.1%} of the CPU part alone, {share(hogged):.1%} beside a hog")


def test_off(build, demo):
    """FRAMESCOPE_KERNEL=off: nothing read, the summary says so; a bad value warns once."""
    r, summary, rows = kernel_run(build, [demo, "--quiet", "--frames", "20"],
                                  {"FRAMESCOPE_KERNEL": "off"})
    check(summary["kernel"]["state"] == "off" and summary["kernel"]["frames"] == 0,
          summary["kernel"])
    check(all(not row["cpu_busy_ms"] for row in rows), "kernel columns filled with it off")
    check("not measured: FRAMESCOPE_KERNEL=off" in (r.summary_line("kernel") or ""), r.stderr)
    r, summary, _ = kernel_run(build, [demo, "--quiet", "--frames", "20"],
                               {"FRAMESCOPE_KERNEL": "sometimes"})
    warnings = [l for l in r.stderr.splitlines() if "FRAMESCOPE_KERNEL" in l]
    check(len(warnings) == 1 and summary["kernel"]["state"] == "on", warnings)
    print("off: nothing measured and said; a bad value: one warning, on")


main({"lock_wait": test_lock_wait, "starved": test_starved, "off": test_off})
