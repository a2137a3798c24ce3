#!/usr/bin/env python3
"""Every output of a capture, recomputed from one committed recording, byte for byte as
committed: a change that is meant to keep the outputs (moving code, splitting files) proves
it did, and one that changes an output shows the change in the same commit.

usage: check_golden.py FRAMESCOPE [--update]

tests/golden/recording.fsr.xz is a recording of the bundled demo on lavapipe and a headless
Weston (200 frames with GPU passes, a stall, a CPU spike, pipelines made mid-run and a lock
wait: hitches, zones, wake-ups, presentation feedback). tests/golden/FORMAT.xz holds what
`framescope report --format FORMAT capture` wrote for it. --update rewrites those files from
the build's framescope (review the diff it prints before committing them)."""
import difflib
import lzma
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
FORMATS = ["text", "full", "json", "csv", "seconds", "zones", "trace", "threads", "presentmon",
           "mangohud", "html"]


def report(framescope, workdir, fmt):
    r = subprocess.run([framescope, "report", "--format", fmt, "capture"], cwd=workdir,
                       capture_output=True, timeout=120)
    if r.returncode != 0:
        sys.exit(f"framescope report --format {fmt}: exit {r.returncode}: "
                 f"{r.stderr.decode(errors='replace')}")
    return r.stdout


def show_diff(fmt, want, got):
    a = want.decode(errors="replace").splitlines()
    b = got.decode(errors="replace").splitlines()
    lines = list(difflib.unified_diff(a, b, f"golden/{fmt}", f"now/{fmt}", n=1, lineterm=""))
    for line in lines[:40]:
        print("    " + line[:300])
    if len(lines) > 40:
        print(f"    ... {len(lines) - 40} more diff lines")


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--update"):
        print(__doc__, file=sys.stderr)
        return 2
    framescope, update = os.path.abspath(sys.argv[1]), len(sys.argv) == 3
    workdir = tempfile.mkdtemp(prefix="fscope-golden-")
    try:
        os.mkdir(os.path.join(workdir, "capture"))
        with lzma.open(os.path.join(HERE, "recording.fsr.xz")) as src, \
                open(os.path.join(workdir, "capture", "recording.fsr"), "wb") as dst:
            shutil.copyfileobj(src, dst)
        changed = []
        for fmt in FORMATS:
            got = report(framescope, workdir, fmt)
            if not got:
                sys.exit(f"framescope report --format {fmt} wrote nothing")
            path = os.path.join(HERE, fmt + ".xz")
            want = None
            if os.path.exists(path):
                with lzma.open(path) as f:
                    want = f.read()
            if want == got:
                print(f"{fmt}: {len(got)} bytes, as committed")
                continue
            changed.append(fmt)
            if want is None:
                print(f"{fmt}: no committed output")
            else:
                print(f"{fmt}: differs from the committed output ({len(want)} -> {len(got)} bytes)")
                show_diff(fmt, want, got)
            if update:
                with lzma.open(path, "wb", preset=9) as f:
                    f.write(got)
                print(f"{fmt}: rewritten")
        if changed and not update:
            print(f"check_golden: {len(changed)} output(s) changed: {', '.join(changed)}; if the "
                  "change is meant, rerun with --update and commit tests/golden with it")
            return 1
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
