#!/usr/bin/env python3
"""What framescope costs a chosen app, and which part of it: rounds of A/X/A (the app without
the layer, with it, without again) and, with --parts, the layer with one part off at a time
(GPU timing, GPU zones, the presentation tracker, the kernel view, its wake-up chain, perf
counters, then all of them) against the whole layer, all interleaved in one run so drift hits
every variant alike (each round starts one variant later than the last).

The frame rate is the app's own where it prints one (glmark2's "FPS: N" per scene, glxgears'
"= N FPS", the demo's "N fps"), else frames / wall time (--frames N). Each variant prints its
median and its spread over the rounds; a median inside the range of every round of the A
variants is "within the noise". Then each variant paired, round by round, with the base
variants of the same round: the median difference in frame time and in how many rounds it was
slower, which sees a cost that drift between rounds hides. Not a test: it prints what it
measured.

With --steady SHORT,LONG the app runs twice a round, its arguments' {frames} given SHORT and
then LONG, and the rate is (LONG - SHORT) / (the difference of the two wall times): the
steady frame rate, free of what starting and ending costs (loading Vulkan and the layer,
writing the capture; MangoHud's start-up is ~0.1 s here), which frames / wall time of one
run charges to every frame. Where the app prints the time its frames took (the demo's "N
frames, T s"), that time is used instead of the wall time: start-up and exit then add no noise,
and no work at exit that grows with the run (reading a recording back to judge it) is taken
for a cost a frame. With --steady or --frames it also prints the app's CPU time and
context switches a frame, all its threads together, from its rusage (with --steady, the
difference of the two runs): on a busy 2-core machine the switches move far less between
runs than the frame rate, and a layer that makes the driver hand work to its threads more
often shows there first.

usage: bench_app.py BUILD_DIR [--rounds N] [--parts] [--mangohud] [--frames N]
                    [--steady SHORT,LONG] [--pin-malloc] [--layer-env FRAMESCOPE_X=V]...
                    [--try FRAMESCOPE_X=V[,FRAMESCOPE_Y=W...]]...
                    -- APP ARGS...
  e.g. MESA_LOADER_DRIVER_OVERRIDE=zink LIBGL_ALWAYS_SOFTWARE=1 \\
       bench_app.py build --parts -- glmark2-wayland -s 320x240 -b build:duration=3
       bench_app.py build --mangohud --parts --steady 1000,5000 -- \\
           vkcube-wayland --c {frames} --present_mode 1

--layer-env FRAMESCOPE_X=V sets a layer variable for every variant with the layer (the
framescope variables of the environment are not passed on: the layer's defaults are measured).
--try FRAMESCOPE_X=V,... adds a variant, the layer with those settings, set against the whole
layer beside the parts (what a setting or an experimental switch gains, paired by round).

--pin-malloc runs every variant with glibc's malloc thresholds fixed (GLIBC_TUNABLES, PIN_MALLOC
below). A driver that allocates and frees large blocks every frame (lavapipe under zink) takes
page faults each frame or none, by where glibc's adaptive thresholds and the heap's top happen
to land, which any other allocation in the process moves: glmark2's shading scene ran at
120-205 fps without the layer and 166-307 with it, by its page faults alone, and at 435-446
and 402-417 with the thresholds fixed.

Without WAYLAND_DISPLAY or DISPLAY, a private headless Weston is started for the app (where
Weston is installed; else the app runs with no display, e.g. the demo with --output offscreen
on a headless GPU)."""
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import Weston, layer_env

PIN_MALLOC = "glibc.malloc.mmap_threshold=67108864:glibc.malloc.trim_threshold=268435456"

PARTS = [
    ("GPU timing (and zones)", {"FRAMESCOPE_GPU": "off"}),
    ("GPU zones", {"FRAMESCOPE_GPU_ZONES": "off"}),
    ("presentation tracker", {"FRAMESCOPE_PRESENT": "off"}),
    ("kernel view", {"FRAMESCOPE_KERNEL": "off"}),
    # Part of the kernel view, where permitted (root or CAP_PERFMON): its cost is the kernel's,
    # on every switch and wake-up of the machine.
    ("wake-up chain", {"FRAMESCOPE_WAKEUPS": "off"}),
    ("perf counters", {"FRAMESCOPE_COUNTERS": "off"}),
    # What is left: the hooks, the frame and wait bookkeeping, the recording.
    ("every part above", {"FRAMESCOPE_GPU": "off", "FRAMESCOPE_PRESENT": "off",
                          "FRAMESCOPE_KERNEL": "off", "FRAMESCOPE_COUNTERS": "off"}),
]


def parse_rates(text, frames, wall):
    """{scene: fps} from what the app printed, else {"fps": frames / wall}."""
    glmark = re.findall(r"\[(\w+)\][^\n]*?FPS: (\d+)", text)
    if glmark:
        return {name: float(fps) for name, fps in glmark}
    gears = re.findall(r"= ([\d.]+) FPS", text)
    if gears:
        return {"fps": statistics.mean(float(g) for g in gears)}
    demo = re.search(r"([\d.]+) fps", text)
    if demo:
        return {"fps": float(demo.group(1))}
    if frames:
        return {"fps": frames / wall}
    return {}


def launch(argv, env):
    """The app run once: its output, wall time, and CPU time (s) and context switches of it
    and its threads (what the children's rusage gained: the compositor is never waited for,
    so it is not in it)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"bench_app: {argv[0]} exited {r.returncode}: {r.stderr[-800:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    switches = after.ru_nvcsw + after.ru_nivcsw - before.ru_nvcsw - before.ru_nivcsw
    return r.stdout + r.stderr, wall, cpu, switches


def loop_seconds(text):
    """The seconds the app says its frames took (the demo: "N frames, T s"), else None."""
    m = re.search(r"\b\d+ frames, ([\d.]+) s\b", text)
    return float(m.group(1)) if m else None


def steady(argv, env, short, long):
    """({"fps": the steady rate}, (CPU us, context switches) a frame) from a SHORT and a LONG
    run of argv with {frames} filled in."""
    runs = [launch([a.replace("{frames}", str(n)) for a in argv], env) for n in (short, long)]
    (text0, wall0, cpu0, sw0), (text1, wall1, cpu1, sw1) = runs
    # The app's own time for its frames where it prints one (the demo's "N frames, T s"): the
    # wall time also holds start-up and exit, whose noise would land on the difference.
    loops = [loop_seconds(t) for t in (text0, text1)]
    if None not in loops:
        wall0, wall1 = loops
    if wall1 <= wall0:
        sys.exit(f"bench_app: {long} frames took no longer than {short} ({wall1:.3f} s "
                 f"against {wall0:.3f} s): does {{frames}} set the app's frame count?")
    n = long - short
    return {"fps": n / (wall1 - wall0)}, (1e6 * (cpu1 - cpu0) / n, (sw1 - sw0) / n)


def run(argv, env, frames):
    """({scene: fps}, (CPU us, context switches) a frame, or None without --frames)."""
    text, wall, cpu, switches = launch(argv, env)
    rates = parse_rates(text, frames, wall)
    if not rates:
        sys.exit(f"bench_app: no frame rate in {argv[0]}'s output; give --frames N")
    return rates, (1e6 * cpu / frames, switches / frames) if frames else None


def cost_table(results, base_labels):
    """results: {label: [(CPU us, switches) a frame, ...]}: the app's CPU time and context
    switches a frame, all its threads together; switches count every time one of them slept or
    was preempted, and move far less between runs than the frame rate on a busy machine."""
    print("\n  CPU and context switches a frame (the app's threads, from its rusage)")
    medians = {label: (statistics.median(c for c, _ in rows), statistics.median(w for _, w in rows))
               for label, rows in results.items()}
    base_cpu = statistics.mean(medians[b][0] for b in base_labels)
    base_sw = statistics.mean(medians[b][1] for b in base_labels)
    for label, rows in results.items():
        cpu, sw = medians[label]
        print(f"    {label:34} {cpu:9.1f} us ({min(c for c, _ in rows):.1f}.."
              f"{max(c for c, _ in rows):.1f}) {100 * (cpu - base_cpu) / base_cpu:+6.1f}%   "
              f"{sw:6.2f} switches ({min(w for _, w in rows):.2f}..{max(w for _, w in rows):.2f})"
              f" {sw - base_sw:+6.2f}")


def table(title, results, base_labels):
    """results: {label: [{scene: fps}, ...]}. Prints median, spread and the change against
    the mean of the base variants' medians."""
    print(f"\n{title}")
    scenes = sorted({s for rows in results.values() for r in rows for s in r})
    for scene in scenes:
        print(f"  {scene}")
        medians, spreads = {}, {}
        for label, rows in results.items():
            values = [r[scene] for r in rows if scene in r]
            medians[label] = statistics.median(values)
            spreads[label] = (min(values), max(values))
        base = [medians[b] for b in base_labels]
        base_ms = statistics.mean(1000 / b for b in base)
        low = min(spreads[b][0] for b in base_labels)
        high = max(spreads[b][1] for b in base_labels)
        for label in results:
            ms = 1000 / medians[label]
            delta = 100 * (ms - base_ms) / base_ms
            within = low <= medians[label] <= high  # inside every round of the base variants
            print(f"    {label:34} {medians[label]:9.1f} fps  ({spreads[label][0]:.1f}.."
                  f"{spreads[label][1]:.1f})  frame time {delta:+6.2f}% "
                  f"({1000 * (ms - base_ms):+.2f} us)"
                  f"{'  within the noise' if within and label not in base_labels else ''}")
        paired(scene, results, base_labels)


def paired(scene, results, base_labels):
    """Round by round: each variant's frame time against the base variants' in the same round
    (minutes apart at most, so what drifts slower than a round cancels). Prints the median
    difference and in how many rounds the variant was slower: a cost that shows in every
    round is real even where the medians' ranges overlap (slower in 6 of 6 happens by chance
    once in 32 runs; in 5 of 5, once in 16)."""
    rounds = min(len(rows) for rows in results.values())
    base = []
    for k in range(rounds):
        times = [1000 / results[b][k][scene] for b in base_labels if scene in results[b][k]]
        base.append(statistics.mean(times) if times else None)
    lines = []
    for label, rows in results.items():
        if label in base_labels:
            continue
        diffs = [1000 * (1000 / rows[k][scene] - base[k]) for k in range(rounds)
                 if base[k] is not None and scene in rows[k]]
        if diffs:
            slower = sum(d > 0 for d in diffs)
            lines.append(f"    {label:34} {statistics.median(diffs):+9.2f} us a frame "
                         f"({min(diffs):+.2f}..{max(diffs):+.2f}), slower in {slower} of "
                         f"{len(diffs)} rounds")
    if lines:
        print(f"    paired by round, against {' and '.join(base_labels)} in the same round:")
        print("\n".join(lines))


def main():
    args = sys.argv[1:]
    if len(args) < 3 or "--" not in args:
        sys.exit(__doc__)
    split = args.index("--")
    opts, app = args[:split], args[split + 1:]
    build = opts.pop(0)
    rounds, parts, mangohud, frames, span, pin_malloc = 3, False, False, None, None, False
    settings, tries = {}, []
    while opts:
        o = opts.pop(0)
        if o == "--rounds" and opts and opts[0].isdigit() and int(opts[0]) > 0:
            rounds = int(opts.pop(0))
        elif o == "--parts":
            parts = True
        elif o == "--mangohud":
            mangohud = True
        elif o == "--pin-malloc":
            pin_malloc = True
        elif o == "--layer-env" and opts and re.fullmatch(r"FRAMESCOPE_[A-Z_]+=.*", opts[0]):
            key, value = opts.pop(0).split("=", 1)
            settings[key] = value
        elif o == "--try":
            tried = opts.pop(0) if opts else ""
            if not re.fullmatch(r"FRAMESCOPE_[A-Z_]+=[^,]*(,FRAMESCOPE_[A-Z_]+=[^,]*)*", tried):
                sys.exit(f"bench_app: --try {tried!r}: give FRAMESCOPE_X=V, several joined by ','")
            tries.append((f"framescope, {tried}",
                          dict(kv.split("=", 1) for kv in tried.split(","))))
        elif o == "--frames" and opts and opts[0].isdigit() and int(opts[0]) > 0:
            frames = int(opts.pop(0))
        elif o == "--steady" and opts and re.fullmatch(r"\d+,\d+", opts[0]):
            span = tuple(int(n) for n in opts.pop(0).split(","))
            if not 0 < span[0] < span[1]:
                sys.exit(f"bench_app: --steady {span[0]},{span[1]}: SHORT must be above 0 "
                         "and below LONG")
        else:
            sys.exit(f"bench_app: bad option {o!r}\n{__doc__}")
    if not app:
        sys.exit(__doc__)
    if span and not any("{frames}" in a for a in app):
        sys.exit("bench_app: --steady needs {frames} in the app's arguments, where its frame "
                 "count goes (vkcube: --c {frames}; the demo: --frames {frames})")

    base = {k: v for k, v in os.environ.items()
            if not k.startswith("FRAMESCOPE") and k not in ("VK_INSTANCE_LAYERS", "MANGOHUD")}
    if pin_malloc:
        base["GLIBC_TUNABLES"] = PIN_MALLOC
    layer = dict(layer_env(build), FRAMESCOPE_SUMMARY="off", **settings)
    variants = [("A (no layer)", {}), ("X (framescope)", layer), ("A (no layer, again)", {})]
    if mangohud:
        variants.append(("MangoHud (no_display)", {"MANGOHUD": "1",
                                                   "MANGOHUD_CONFIG": "no_display"}))
    if parts:
        variants += [(f"framescope, {name} off", dict(layer, **off)) for name, off in PARTS]
    variants += [(name, dict(layer, **tried)) for name, tried in tries]

    def measure(env_extra):
        results = {label: [] for label, _ in variants}
        for k in range(rounds):
            # Each round starts one variant later: this machine runs slower or faster for
            # seconds at a time, and a fixed order would hand each phase to the same variants.
            for label, extra in variants[k % len(variants):] + variants[:k % len(variants)]:
                env = dict(env_extra, **extra)
                results[label].append(steady(app, env, *span) if span else
                                      run(app, env, frames))
        return results

    if os.environ.get("WAYLAND_DISPLAY") or os.environ.get("DISPLAY") or \
            not shutil.which("weston"):
        results = measure(base)  # a desktop's, or none at all (a headless GPU, offscreen)
    else:
        with Weston() as w:
            results = measure(dict(base, **w.env()))
    title = f"{' '.join(app)}: {rounds} rounds, variants interleaved" + \
        (f", steady rate from {span[0]} and {span[1]} frames" if span else "") + \
        (", malloc's thresholds pinned" if pin_malloc else "") + \
        "".join(f", {k}={v}" for k, v in settings.items())
    rates = {k: [r for r, _ in v] for k, v in results.items()}
    costs = {k: [c for _, c in v] for k, v in results.items()}
    whole = [k for k in results if not k.startswith("framescope,")]
    split = [k for k in results if k.startswith(("X", "framescope,"))]
    table(title, {k: rates[k] for k in whole}, ["A (no layer)", "A (no layer, again)"])
    if span or frames:
        cost_table({k: costs[k] for k in whole}, ["A (no layer)", "A (no layer, again)"])
    if parts or tries:
        table("the layer's parts" + (" and settings tried" if tries else "") +
              ": the whole layer against it with one part off" +
              (" or a setting changed" if tries else "") + " (a part costs what turning it off "
              "gains)", {k: rates[k] for k in split}, ["X (framescope)"])
        if span or frames:
            cost_table({k: costs[k] for k in split}, ["X (framescope)"])


if __name__ == "__main__":
    main()
