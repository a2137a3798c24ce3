#!/usr/bin/env python3
"""How compact is the recording? The demo at 16x16 offscreen under the layer alone (the app
writes its own capture, FRAMESCOPE_OUTPUT) and under `framescope run` (the stream file is
run's), for each FRAMES: the frame rate, recording.fsr's bytes (its length and what it takes
on disk) a frame, what the stream thread moved and what that took in the stream file a frame,
and the stream thread's CPU time (all of it, and encoding). A build before format 10 says
less (no stream-thread line): its stream file is measured by its blocks on disk. Not a test:
it prints what it measured.

usage: bench_compact.py BUILD [FRAMES...]   (default 10000 100000)"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import layer_env


def env_for(build, extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FRAMESCOPE") and k not in ("VK_INSTANCE_LAYERS",
                                                           "WAYLAND_DISPLAY")}
    env.update(extra)
    return env


def capture_size(out):
    st = os.stat(os.path.join(out, "recording.fsr"))
    return st.st_size, st.st_blocks * 512


def main():
    build = sys.argv[1]
    counts = [int(a) for a in sys.argv[2:]] or [10000, 100000]
    demo = os.path.join(build, "tools", "demo", "framescope-demo")
    exe = os.path.join(build, "tools", "framescope")
    args = ["--output", "offscreen", "--width", "16", "--height", "16"]
    for frames in counts:
        base = tempfile.mkdtemp(prefix="fscope-compact-bench-")
        out = os.path.join(base, "self")
        env = env_for(build, dict(layer_env(build), FRAMESCOPE_OUTPUT=out,
                                  FRAMESCOPE_SUMMARY="off", FRAMESCOPE_LOG="debug"))
        proc = subprocess.run([demo, *args, "--frames", str(frames)], env=env,
                              capture_output=True, text=True, timeout=1200)
        fps = re.search(r"([\d.]+) fps", proc.stdout)
        size, disk = capture_size(out)
        print(f"{frames} frames, layer alone: {fps.group(1) if fps else '?'} fps; recording.fsr "
              f"{size} bytes ({size / frames:.1f} a frame), {disk} on disk "
              f"({disk / frames:.1f} a frame)")
        m = re.search(r"the stream thread moved (\d+) chunks \((\d+) frames\), (\d+) KiB stored "
                      r"in (\d+) KiB; ([\d.]+) ms of its CPU time, ([\d.]+) ms of it encoding",
                      proc.stderr)
        if m:
            streamed, raw, stored = int(m.group(2)), int(m.group(3)), int(m.group(4))
            print(f"  stream: {m.group(1)} chunks, {streamed} frames, {raw} KiB in {stored} KiB"
                  f" ({stored * 1024 / max(streamed, 1):.1f} bytes a frame streamed); the "
                  f"stream thread {m.group(5)} ms of CPU, {m.group(6)} ms encoding")
        back = re.search(r"read back (\d+) KiB of the recording streamed", proc.stderr)
        if back and not m:
            print(f"  stream: {back.group(1)} KiB read back")
        out = os.path.join(base, "run")
        runtime = tempfile.mkdtemp(prefix="fscope-rt-")
        os.chmod(runtime, 0o700)
        proc = subprocess.run([exe, "run", "--summary", "off", "--output", out,
                               "--compositor", "never", "--", demo, *args, "--frames",
                               str(frames)],
                              env=env_for(build, dict(FRAMESCOPE_LOG="debug",
                                                      XDG_RUNTIME_DIR=runtime)),
                              capture_output=True, text=True, timeout=1200)
        size, disk = capture_size(out)
        m = re.search(r"(\d+) KiB streamed to disk(?: \(in (\d+) KiB\))?", proc.stderr)
        line = f"{frames} frames, framescope run: recording.fsr {size} bytes " \
               f"({size / frames:.1f} a frame)"
        if m:
            on_disk = int(m.group(2) or m.group(1)) * 1024
            line += f"; stream file {on_disk} bytes on disk ({on_disk / frames:.1f} a frame)"
        print(line)


if __name__ == "__main__":
    main()
