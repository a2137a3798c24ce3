#!/usr/bin/env python3
"""The README's user's guide, run as written (issue 19, item 5): every line starting with "$ "
in the guide's shell blocks, in a home directory of its own, with the build's framescope and
demo on PATH, on a headless Weston. The install command is checked against the build's own
install plan (meson introspect --installed: where each file would land under the guide's
prefix) and stood in for by the layer's manifest put where the guide says; the systemctl
command by the daemon behind systemd-socket-activate on the socket the unit names. Each
verdict and hitch the guide shows after a command must be what that command prints here.

usage: test_guide.py TEST BUILD_DIR DEMO"""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import Weston, check, main
from test_daemon import Daemon

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSTALL = "meson setup build --prefix ~/.local && meson install -C build"
DAEMON = "systemctl --user enable --now framescoped.socket"


def guide_blocks():
    """[(command, [lines shown after it])] from the guide's ```sh blocks, in order."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    m = re.search(r"<!-- guide:.*?-->(.*?)<!-- /guide -->", text, re.S)
    check(m, "README.md has no guide section")
    steps = []
    for block in re.findall(r"```sh\n(.*?)```", m.group(1), re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            elif steps and line.strip():
                steps[-1][1].append(line)
    return steps


def check_install_plan(build, guide_text):
    """Every path the guide says the install writes is where this build would install it
    with --prefix ~/.local (its libdir as configured here)."""
    out = subprocess.run(["meson", "introspect", "--installed", build], capture_output=True,
                         text=True, timeout=60)
    check(out.returncode == 0, out.stderr)
    installed = set(json.loads(out.stdout).values())
    opts = {o["name"]: o["value"] for o in json.loads(subprocess.run(
        ["meson", "introspect", "--buildoptions", build], capture_output=True, text=True,
        timeout=60).stdout)}
    prefix = opts["prefix"]
    claimed = set(re.findall(r"`~/\.local/([^`$ ]+)`", guide_text))
    check(claimed, "the guide names no installed path")
    for rel in claimed:
        if rel == "bin":
            continue
        if rel.startswith("lib/x86_64-linux-gnu/"):
            rel = opts["libdir"] + rel[len("lib/x86_64-linux-gnu"):]
        path = os.path.join(prefix, rel)
        check(path in installed or any(p.startswith(path + "/") for p in installed),
              f"the guide says ~/.local/{rel}; this build installs {sorted(installed)}")
    for name in ("framescope", "framescoped", "framescope-demo"):
        check(os.path.join(prefix, opts["bindir"], name) in installed, f"{name} not installed")
    return len(claimed)


def test_guide(build, demo):
    build = os.path.abspath(build)
    steps = guide_blocks()
    commands = [c for c, _ in steps]
    check(INSTALL in commands and DAEMON in commands, f"guide commands: {commands}")
    home = tempfile.mkdtemp(prefix="fscope-guide-")
    with open(os.path.join(ROOT, "README.md")) as f:
        guide_text = f.read().split("<!-- /guide -->")[0]
    paths = check_install_plan(build, guide_text)
    # What the install leaves for the loader: the manifest under ~/.local/share (here the
    # build tree's, pointing at the built layer).
    implicit = os.path.join(home, ".local", "share", "vulkan", "implicit_layer.d")
    os.makedirs(implicit)
    shutil.copy(os.path.join(build, "layers", "dev", "VkLayer_framescope.json"), implicit)
    state = tempfile.mkdtemp(prefix="fscope-guide-state-")
    daemon = None
    ran = []
    with Weston() as w:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("FRAMESCOPE", "VK_", "XDG_DATA_HOME", "DISABLE_FRAMESCOPE"))}
        env.update(w.env())
        env.update(HOME=home, XDG_STATE_HOME=state,
                   PATH=os.pathsep.join([os.path.join(build, "tools"),
                                         os.path.join(build, "tools", "demo"), env["PATH"]]))
        try:
            for command, shown in steps:
                if command == INSTALL:
                    ran.append(f"install plan: {paths} paths")
                    continue
                if command == DAEMON:
                    with open(os.path.join(build, "systemd", "framescoped.socket")) as f:
                        check("ListenSequentialPacket=%t/framescope/framescoped.sock" in f.read(),
                              "the socket unit listens elsewhere than the daemon test")
                    daemon = Daemon(build, w.runtime, state).start()
                    ran.append("daemon up")
                    continue
                r = subprocess.run(["bash", "-c", command], env=env, cwd=home,
                                   capture_output=True, text=True, timeout=300)
                out = r.stdout + r.stderr
                check(r.returncode == 0, f"$ {command}\nexit {r.returncode}\n{out[-3000:]}")
                for line in shown:
                    m = re.match(r"  verdict     (\w+)-bound", line)
                    if m:
                        check(re.search(rf"^  verdict     {m.group(1)}-bound", out, re.M),
                              f"$ {command}\nthe guide shows {m.group(1)}-bound:\n{out[-3000:]}")
                check_outputs(command, out, home)
                ran.append(command.split(" -- ")[0][:60])
        finally:
            if daemon:
                daemon.stop()
    print(f"{len(steps)} guide commands run: " + "; ".join(ran))


def check_outputs(command, out, home):
    """What the guide says each kind of command gives, checked on what it gave."""
    if command.startswith("FRAMESCOPE=1"):
        check(out.count("framescope: summary for framescope-demo") == 1, out[-2000:])
        check(os.path.exists(os.path.join(home, "captures", "demo-env", "summary.json")),
              "FRAMESCOPE_OUTPUT wrote no capture")
    elif command.startswith("framescope run"):
        capture = os.path.join(home, re.search(r"-o ~/(\S+)", command).group(1))
        with open(os.path.join(capture, "summary.json")) as f:
            summary = json.load(f)
        frames = int(re.search(r"--frames (\d+)", command).group(1))
        check(summary["frames"] == frames, f"{summary['frames']} frames, asked for {frames}")
        if "--cpu-spike" in command:
            at = int(re.search(r"--cpu-spike (\d+):", command).group(1))
            hitches = {h["frame"] for h in summary["hitches"]["all"]}
            check(at in hitches and re.search(rf"^  hitch       frame {at} ", out, re.M),
                  f"the 80 ms CPU spike at frame {at} is not a hitch: {sorted(hitches)}")
            with open(os.path.join(capture, "frames.csv")) as f:
                rows = {int(r["frame"]): r for r in csv.DictReader(f)}
            p_at = int(re.search(r"--pipelines-at (\d+):", command).group(1))
            f_at = int(re.search(r"--faults-at (\d+):", command).group(1))
            check(int(rows[p_at]["pipelines"]) == 12, rows[p_at])
            check(rows[f_at]["block_reads"] == "" or int(rows[f_at]["block_reads"]) > 0 or
                  int(rows[f_at]["major_faults"]) > 0, f"no reads from disk: {rows[f_at]}")
        if "--redundant-binds" in command:
            # Every bind but each command buffer's first repeats the last: exact, at the label.
            draws = int(re.search(r"--draws (\d+)", command).group(1))
            threads = int(re.search(r"--record-threads (\d+)", command).group(1))
            want = f"{draws - threads}.0 of {draws}.0 vertex-buffer"
            check(re.search(rf"^  redundant   at label 'cubes':.* {re.escape(want)}", out, re.M),
                  f"no '{want}' at label 'cubes':\n{out[-3000:]}")
            check(re.search(rf"^  recording   [\d.]+ ms per frame on {threads} threads", out,
                            re.M), out[-3000:])
    elif command.startswith("framescope report --format csv"):
        check(out.startswith("frame,surface,"), out[:200])
    elif command.startswith("framescope report"):
        check("framescope: summary for framescope-demo" in out, out[:500])
    elif command.startswith("framescope top"):
        check(re.search(r"^PID +APP +FPS", out, re.M), out[:500])
    elif command.startswith("framescope diff"):
        check(re.search(r"^fps ", out, re.M), out[:800])
    elif command.startswith("framescope compare"):
        check(re.search(r"\bX\b", out) and os.path.isdir(os.path.join(home, "captures",
                                                                      "compare", "A2")),
              out[-1500:])


if __name__ == "__main__":
    main({"guide": test_guide})
