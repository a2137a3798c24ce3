#!/usr/bin/env python3
"""The framescope CLI used as a user would: help, usage errors, exit-status pass-through, and
`framescope run` with no Wayland session (it starts its own headless Weston) on the demo.

usage: test_cli.py TEST FRAMESCOPE_EXE"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import check, main


def run(exe, *args, env=None):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("FRAMESCOPE") and k not in ("WAYLAND_DISPLAY", "VK_INSTANCE_LAYERS")}
    e.update(env or {})
    return subprocess.run([exe, *args], capture_output=True, text=True, env=e, timeout=300)


def test_usage(exe):
    r = run(exe, "--help")
    check(r.returncode == 0 and "framescope run" in r.stdout, "--help")
    for flag in ("--output", "--no-capture", "--summary", "--compositor", "--cap"):
        check(flag in r.stdout, f"--help does not document {flag}")
    for args, what in [((), "no command"), (("bogus",), "unknown command"),
                       (("run", "--summary", "sideways"), "bad --summary"),
                       (("run", "--compositor", "maybe"), "bad --compositor"),
                       (("run", "--output", ""), "empty --output"),
                       (("run", "--cap", "0"), "--cap 0"), (("run", "--cap", "fast"), "--cap fast"),
                       (("run", "--frobnicate"), "unknown option")]:
        r = run(exe, *args)
        check(r.returncode == 2, f"{what}: exit {r.returncode}, expected 2")
        check(r.stderr.strip(), f"{what}: no error message")
    r = run(exe, "run", "--no-capture", "--compositor", "never", "--", "/nonexistent/app")
    check(r.returncode == 125 and "cannot run" in r.stderr, "missing command not reported")
    r = run(exe, "run", "--no-capture", "--compositor", "never", "--", "sh", "-c", "exit 7")
    check(r.returncode == 7, f"exit status not passed through ({r.returncode})")
    r = run(exe, "run", "--no-capture", "--compositor", "never", "--", "sh", "-c", "kill -TERM $$")
    check(r.returncode == 128 + 15, f"signal death not reported as 143 ({r.returncode})")
    r = run(exe, "run", "--no-capture", "--compositor", "never", "--", "sh", "-c",
            'echo "$VK_INSTANCE_LAYERS"')
    check("VK_LAYER_FRAMESCOPE" in r.stdout, "layer not enabled for the command")
    r = run(exe, "run", "--no-capture", "--compositor", "never", "--cap", "auto", "--", "sh", "-c",
            'echo "$FRAMESCOPE_CAP"')
    check(r.stdout.strip() == "auto", "--cap not passed to the layer")


def test_demo_no_session(exe):
    """The README's first command: no Wayland session, no arguments: demo profiled, summary
    printed, capture written."""
    out = os.path.join(tempfile.mkdtemp(prefix="fscope-cli-"), "capture")
    r = run(exe, "run", "--output", out, env={"XDG_RUNTIME_DIR": tempfile.mkdtemp()})
    check(r.returncode == 0, f"framescope run failed ({r.returncode}):\n{r.stderr[-3000:]}")
    check("started a headless Weston" in r.stderr, "no headless compositor was started")
    check(r.stderr.count("framescope: summary for framescope-demo") == 1, "summary missing")
    s = json.load(open(os.path.join(out, "summary.json")))
    check(s["frames"] == 300, f"demo presents 300 frames by default; counted {s['frames']}")
    check(s["verdict"]["run"] == "display", f"idle demo under FIFO: {s['verdict']}")
    check(f"capture in {out}" in r.stderr, "capture not pointed at")
    print(r.stderr)


TESTS = {name[5:]: fn for name, fn in globals().items() if name.startswith("test_")}

if __name__ == "__main__":
    main(TESTS)
