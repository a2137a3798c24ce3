#!/usr/bin/env python3
"""Does the shared-memory recording cost the app anything? A/X/A in one run: the layer from
a build before it (A), the layer with it (X), the earlier layer again (A), each against the
same demo binary; "no measurable difference" when X differs from the mean of the As by less
than their drift. With --observed, X runs under `framescope run` (the recording a memfd it
hands over, streamed to disk) instead of the app's own. Not a test: it prints what it measured.

usage: bench_recording.py [--offscreen] [--observed] OLD_BUILD NEW_BUILD DEMO [FRAMES] [ROUNDS]"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_layer import measure, report
from vkharness import Weston, layer_env


def main():
    args = sys.argv[1:]
    offscreen = "--offscreen" in args
    observed = "--observed" in args
    args = [a for a in args if a not in ("--offscreen", "--observed")]
    old, new, demo = args[0], args[1], args[2]
    frames = int(args[3]) if len(args) > 3 else 3000
    rounds = int(args[4]) if len(args) > 4 else 2
    demo_fps = lambda text: float(m.group(1)) if (m := re.search(r"([\d.]+) fps", text)) else None
    demo_args = (["--output", "offscreen"] if offscreen else ["--present-mode", "mailbox"]) + \
        ["--frames", str(frames)] + os.environ.get("DEMO_ARGS", "").split()

    def run_all(session):
        base = {k: v for k, v in os.environ.items()
                if not k.startswith("FRAMESCOPE") and k != "VK_INSTANCE_LAYERS"}
        base.update(session)
        before = dict(base, **layer_env(old), FRAMESCOPE_SUMMARY="off")
        after = dict(base, **layer_env(new), FRAMESCOPE_SUMMARY="off")
        x_argv = [demo] + demo_args
        if observed:
            x_argv = [os.path.join(new, "tools", "framescope"), "run", "--no-capture",
                      "--summary", "off", "--compositor", "never", "--"] + x_argv
            after = dict(base, **layer_env(new))
        for _ in range(rounds):
            rows = []
            for label, argv, env in [("A (before)", [demo] + demo_args, before),
                                     ("X (recording)", x_argv, after),
                                     ("A (before, again)", [demo] + demo_args, before)]:
                fps, err = measure(argv, env, frames, demo_fps)
                rows.append((label, fps, err))
            report(f"framescope-demo {' '.join(demo_args)}{', under framescope run' if observed else ''}",
                   rows, "A (before)", "X (recording)", "A (before, again)", "the recording")

    if offscreen:
        run_all({})
    else:
        with Weston() as w:
            run_all(w.env())


main()
