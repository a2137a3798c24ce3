#!/usr/bin/env python3
"""X11 presentation feedback on real servers: the tracker against Xvfb and XWayland (under
Weston) driven by a client presenting like Mesa's DRI3 WSI (test-present-x11; it also gives
the tracker a window that does not exist), and vkcube on XCB under the layer (lavapipe's X11
path does not use Present: said, not faked). A server without Present is not tested: Debian's
Xvfb and XWayland cannot be started without it.

usage: test_x11.py TEST BUILD_DIR PROBE"""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import SKIP, Weston, check, main, run_app


class Xvfb:
    def __init__(self, extra=()):
        self.extra = list(extra)

    def __enter__(self):
        exe = shutil.which("Xvfb")
        if not exe:
            print("Xvfb not installed")
            sys.exit(SKIP)
        # A display number of our own, away from :0 (a desktop's, or another test's in
        # another mount namespace sharing the abstract socket namespace).
        base = 200 + os.getpid() % 500
        for number in range(base, base + 50):
            if os.path.exists(f"/tmp/.X{number}-lock"):
                continue
            self.proc = subprocess.Popen([exe, f":{number}", "-screen", "0", "640x480x24",
                                          "-nolisten", "tcp"] + self.extra,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 10
            while self.proc.poll() is None and time.time() < deadline:
                if os.path.exists(f"/tmp/.X11-unix/X{number}"):
                    self.display = f":{number}"
                    return self
                time.sleep(0.02)
            self.proc.kill()
            self.proc.wait()
        check(False, "no Xvfb display could be started")

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(10)


def run_probe(probe, display, env=None):
    out = subprocess.run([probe], env=dict(env or os.environ, DISPLAY=display),
                         capture_output=True, text=True, timeout=120)
    return out


def test_xvfb(build, probe):
    """The tracker against Xvfb's Present (a software vblank)."""
    with Xvfb() as x:
        out = run_probe(probe, x.display)
    check(out.returncode == 0, f"test-present-x11 on Xvfb {x.display}: {out.returncode}\n{out.stdout}"
          f"{out.stderr}")
    print("Xvfb:", out.stdout.strip())


def test_xwayland(build, probe):
    """The same against XWayland under a headless Weston (weston --xwayland)."""
    if not shutil.which("Xwayland"):
        print("Xwayland not installed")
        sys.exit(SKIP)
    with Weston(["--xwayland"]) as w:
        log = os.path.join(w.runtime, "weston.log")
        deadline = time.time() + 20
        display = None
        while time.time() < deadline and not display:
            text = open(log).read()
            for line in text.splitlines():
                if "xserver listening on display" in line:
                    display = line.rsplit(" ", 1)[-1].strip()
            time.sleep(0.1)
        check(display, "weston --xwayland gave no display:\n" + open(log).read()[-1500:])
        out = run_probe(probe, display, dict(os.environ, **w.env()))
    check(out.returncode == 0, f"test-present-x11 on XWayland: {out.returncode}\n{out.stdout}"
          f"{out.stderr}")
    print("XWayland:", out.stdout.strip())


def test_vkcube(build, probe):
    """vkcube on XCB under the layer on Xvfb: lavapipe presents with PutImage, so no completion
    comes; after the tracker's limit it stops asking and the summary says why. The tally still
    adds up and the frames are all there."""
    if not shutil.which("vkcube"):
        print("vkcube not installed")
        sys.exit(SKIP)
    with Xvfb() as x:
        # run_app: the layer, a capture, and a sanitizer runtime preloaded into vkcube when
        # the layer is built with one.
        r = run_app(["vkcube", "--c", "300"], None, build, extra_env={"DISPLAY": x.display},
                    timeout=120)
    check(r.rc == 0, r.stderr[-1500:])
    summary = r.json()
    surface = summary["surfaces"][0]
    check(surface["label"].startswith("x11 surface"), surface)
    check(surface["requested"] == surface["presented"] + surface["discarded"] + surface["pending"],
          surface)
    check(summary["frames"] >= 299, summary["frames"])
    if surface["presented"]:
        print(f"this driver presents through Present: {surface['presented']} shown")
        return
    check("does not present through the Present extension" in r.stderr, r.stderr[-1500:])
    print(f"{summary['frames']} frames; no completion from lavapipe's PutImage path: said after "
          f"{surface['requested']} presents")


main({"xvfb": test_xvfb, "xwayland": test_xwayland, "vkcube": test_vkcube})
