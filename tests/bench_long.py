#!/usr/bin/env python3
"""A long run's end, measured (issue 35): the demo at 16x16 offscreen for N frames, for each
build given, one after the other on the same machine,

- under `framescope run` (its capture written): run's peak RSS (its VmHWM, read every 50 ms),
  the delay from the app's end to run's exit, and each capture file's bytes a frame;
- under the layer alone with the summary only (no capture): the app's peak RSS and the delay
  from its last line on stdout (printed after its last frame) to its exit.

usage: bench_long.py BUILD [BUILD...] [--frames N] [--only run|app]

Prints ratios of nothing: the figures, one build a column, for tests/bench/README.md."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time


def demo_args(build, frames):
    return [os.path.join(build, "tools", "demo", "framescope-demo"), "--output", "offscreen",
            "--width", "16", "--height", "16", "--frames", str(frames)]


def peak_rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def under_run(build, frames, base):
    """framescope run's peak RSS, the app's end to run's exit, and bytes a frame per file."""
    out = os.path.join(base, "capture")
    stamp = os.path.join(base, "app-end")
    status = os.path.join(base, "app-status")
    shutil.rmtree(out, ignore_errors=True)
    app = " ".join(demo_args(build, frames))
    argv = [os.path.join(build, "tools", "framescope"), "run", "--compositor", "never",
            "--summary", "off", "-o", out, "--", "sh", "-c",
            f"{app} > /dev/null; echo $? > {status}; date +%s.%N > {stamp}"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, peak_rss_kib(proc.pid))
        time.sleep(0.05)
    end = time.time()
    err = proc.stderr.read()
    if proc.returncode != 0 or not os.path.exists(stamp):
        sys.exit(f"framescope run failed ({proc.returncode}):\n{err[-2000:]}")
    # The capture of an app that died is still written, of fewer frames: not a figure.
    app_status = open(status).read().strip()
    if app_status != "0":
        sys.exit(f"the demo under framescope run failed ({app_status}):\n{err[-2000:]}")
    delay = end - float(open(stamp).read())
    sizes = {name: os.path.getsize(os.path.join(out, name)) / frames
             for name in sorted(os.listdir(out))}
    return {"run peak RSS (MiB)": peak / 1024, "app's end to run's exit (s)": delay,
            **{f"{name} (B a frame)": size for name, size in sizes.items()}}


def in_app(build, frames):
    """The app's peak RSS and the delay from its last line to its exit, summary only."""
    env = dict(os.environ, VK_ADD_LAYER_PATH=os.path.join(build, "layers", "dev"),
               VK_INSTANCE_LAYERS="VK_LAYER_FRAMESCOPE",
               LD_LIBRARY_PATH=os.path.join(build, "src"))
    env.pop("FRAMESCOPE_OUTPUT", None)
    rss = tempfile.NamedTemporaryFile(prefix="fscope-rss-")
    proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", rss.name] +
                            demo_args(build, frames), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    last = None
    for _ in proc.stdout:
        last = time.time()
    err = proc.stderr.read()
    proc.wait()
    end = time.time()
    if proc.returncode != 0 or last is None:
        sys.exit(f"the demo failed ({proc.returncode}):\n{err[-2000:]}")
    return {"app peak RSS, summary only (MiB)": int(open(rss.name).read().split()[-1]) / 1024,
            "app's last line to its exit (s)": end - last}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("builds", nargs="+")
    p.add_argument("--frames", type=int, default=1000000)
    p.add_argument("--only", choices=("run", "app"))
    a = p.parse_args()
    columns = []
    for build in a.builds:
        base = tempfile.mkdtemp(prefix="fscope-long-")
        figures = {}
        if a.only != "app":
            figures.update(under_run(build, a.frames, base))
        if a.only != "run":
            figures.update(in_app(build, a.frames))
        shutil.rmtree(base, ignore_errors=True)
        columns.append(figures)
    rows = []
    for c in columns:
        rows += [k for k in c if k not in rows]
    print(f"{a.frames} frames of the demo at 16x16 offscreen")
    print("| | " + " | ".join(a.builds) + " |")
    print("|---|" + "---|" * len(a.builds))
    for row in rows:
        cells = [f"{c[row]:,.2f}" if row in c else "—" for c in columns]
        print(f"| {row} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
