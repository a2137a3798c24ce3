#!/usr/bin/env python3
"""framescoped under real socket activation (Debian's systemd-socket-activate, the real daemon
binary), with the demo under the layer as a user who enabled it globally would run it: live in
`framescope top`, a snapshot while it runs, its capture after SIGKILL, a daemon restarted or
killed under running apps, no daemon at all, another user, hostile messages, fifty apps.

usage: test_daemon.py TEST BUILD_DIR DEMO"""
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import SKIP, TestFailure, Weston, check, layer_env, main

MAGIC = b"FSCOPED1"
REQUEST = struct.Struct("=8sIIiI64s256s")  # struct fscoped_request
REGISTER, LIST, SNAPSHOT = 1, 2, 3


class Daemon:
    """framescoped behind systemd-socket-activate on the socket path apps look for: the daemon
    starts on the first connection, as under systemd's framescoped.socket."""

    def __init__(self, build, runtime, state, keep=20):
        self.build, self.runtime, self.state, self.keep = build, runtime, state, keep
        self.dir = os.path.join(runtime, "framescope")
        self.path = os.path.join(self.dir, "framescoped.sock")
        self.log_path = os.path.join(state, "daemon.log")

    def start(self):
        activate = shutil.which("systemd-socket-activate")
        if not activate:
            print("systemd-socket-activate not installed")
            sys.exit(SKIP)
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            [activate, "--seqpacket", "-l", self.path, "-E", f"XDG_STATE_HOME={self.state}",
             os.path.join(self.build, "tools", "framescoped"), "--keep", str(self.keep)],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while not os.path.exists(self.path):
            check(self.proc.poll() is None and time.time() < deadline,
                  "systemd-socket-activate did not listen: " + self.text())
            time.sleep(0.02)
        return self

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(10)
        self.log.close()

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_for(self, needle, timeout=30, count=1):
        deadline = time.time() + timeout
        while self.text().count(needle) < count:
            check(time.time() < deadline, f"the daemon never said {needle!r}:\n{self.text()}")
            time.sleep(0.05)


def app_env(build, weston, extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FRAMESCOPE") and k not in ("VK_INSTANCE_LAYERS",
                                                           "VK_ADD_LAYER_PATH")}
    env.update(weston.env())
    env.update(layer_env(build))
    env.update(extra or {})
    return env


def cli(build, weston, *args, timeout=120):
    env = dict(os.environ, XDG_RUNTIME_DIR=weston.runtime)
    return subprocess.run([os.path.join(build, "tools", "framescope")] + list(args), env=env,
                          capture_output=True, text=True, timeout=timeout)


def top(build, weston):
    out = cli(build, weston, "top", "--once", "--json")
    check(out.returncode == 0, f"top: {out.returncode} {out.stderr}")
    return json.loads(out.stdout)["apps"]


def captures(state):
    base = os.path.join(state, "framescope")
    if not os.path.isdir(base):
        return []
    return sorted(os.path.join(base, d) for d in os.listdir(base) if d.endswith(".capture"))


def capture_frames(capture):
    with open(os.path.join(capture, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(capture, "frames.csv")) as f:
        rows = len(f.readlines()) - 1
    check(summary["frames"] == rows, f"{capture}: summary says {summary['frames']} frames, "
          f"frames.csv has {rows}")
    return summary


def reproduce(build, capture):
    out = subprocess.run([os.path.join(build, "tools", "framescope"), "report", capture],
                         capture_output=True, text=True, timeout=120)
    check(out.returncode == 0 and "framescope: summary for" in out.stdout + out.stderr,
          f"report {capture}: {out.returncode} {out.stderr[-800:]}")


def wait_listed(build, weston, pid, timeout=30, frames=1):
    deadline = time.time() + timeout
    while True:
        apps = {a["pid"]: a for a in top(build, weston)}
        if pid in apps and apps[pid]["frames"] >= frames:
            return apps[pid]
        check(time.time() < deadline, f"pid {pid} never listed with frames: {apps}")
        time.sleep(0.2)


def test_crash(build, demo):
    """An app killed by SIGKILL: the daemon (started by its registration) writes its capture;
    while it ran, top listed it live and a snapshot captured its last second."""
    state = tempfile.mkdtemp(prefix="fscope-state-")
    with Weston() as w:
        d = Daemon(build, w.runtime, state).start()
        try:
            app = subprocess.Popen([demo, "--quiet", "--frames", "1000000"],
                                   env=app_env(build, w), stderr=subprocess.PIPE, text=True)
            d.wait_for("registered")
            live = wait_listed(build, w, app.pid, frames=10)
            check(live["name"] == "framescope-demo" and live["fps"] > 0 and
                  0 < live["p50_ms"] <= live["p99_ms"] and live["verdict"] != "none", live)
            check(live["resolved"] > 0 and live["shown"] <= live["resolved"], live)
            text = cli(build, w, "top", "--once")
            check(str(app.pid) in text.stdout and "framescope-demo" in text.stdout, text.stdout)
            snap = cli(build, w, "snapshot", "framescope-demo", "--last", "1")
            check(snap.returncode == 0 and snap.stdout.strip().endswith("-snapshot.capture"),
                  f"snapshot: {snap.returncode} {snap.stdout} {snap.stderr}")
            snapshot = snap.stdout.strip()
            # Two more at once (the same second, as a rule): each its own capture, none
            # replacing another.
            more = [cli(build, w, "snapshot", "framescope-demo", "--last", "1")
                    for _ in range(2)]
            paths = [snapshot] + [m.stdout.strip() for m in more]
            check(all(m.returncode == 0 for m in more) and len(set(paths)) == 3 and
                  all(os.path.isdir(p) for p in paths), f"three snapshots: {paths}")
            summary = capture_frames(snapshot)
            # The last second: at most a second of frames plus the one that straddles it.
            longest = summary["frame_ms"]["max"] / 1e3
            check(0 < summary["frames"] and summary["duration_s"] <= 1.0 + longest + 1e-3,
                  f"snapshot of the last second holds {summary['frames']} frames over "
                  f"{summary['duration_s']} s")
            reproduce(build, snapshot)
            check(app.poll() is None, "the snapshot stopped the app")
            time.sleep(0.5)
            app.kill()
            app.wait(30)
            d.wait_for("ended without reaching its exit")
            d.wait_for("; capture ")
        finally:
            d.stop()
    made = [c for c in captures(state) if not re.search(r"-snapshot(-\d+)?\.capture$", c)]
    check(len(made) == 1, f"captures after the kill: {captures(state)}\n{d.text()}")
    summary = capture_frames(made[0])
    check(summary["frames"] >= live["frames"], f"{summary['frames']} frames in the capture")
    reproduce(build, made[0])
    lines = [l for l in d.text().splitlines() if f"pid {app.pid}" in l and "capture" in l
             and "snapshot" not in l]
    check(len(lines) == 1 and f"{summary['frames']} frames" in lines[0], lines)
    print(f"killed after {summary['frames']} frames: captured; the snapshot held "
          f"{capture_frames(snapshot)['frames']} frames of its last second")


def test_restart(build, demo):
    """The daemon killed under a running app (the app goes on), then started again: the app
    registers again by itself, and when it exits the capture holds every frame."""
    state = tempfile.mkdtemp(prefix="fscope-state-")
    frames = 240
    with Weston() as w:
        d = Daemon(build, w.runtime, state).start()
        app = subprocess.Popen([demo, "--quiet", "--frames", str(frames)],
                               env=app_env(build, w), stderr=subprocess.PIPE, text=True)
        d.wait_for("registered")
        d.stop(signal.SIGKILL)
        check(app.poll() is None, "the app ended with the daemon")
        d = Daemon(build, w.runtime, state).start()
        try:
            wait_listed(build, w, app.pid, timeout=20)
            _, err = app.communicate(timeout=240)
            check(app.returncode == 0, f"the app failed: {app.returncode}\n{err[-1500:]}")
            d.wait_for("; capture ")
        finally:
            d.stop()
    made = captures(state)
    check(len(made) == 1, f"{made}\n{d.text()}")
    summary = capture_frames(made[0])
    # Every frame the app itself counted at its exit (its own summary, on stderr).
    own = re.search(r"^  frames +(\d+) in", err, re.M)
    check(own and summary["frames"] == int(own.group(1)), f"{summary['frames']} frames "
          f"captured; the app's own summary: {own and own.group(0)}")
    check("(pid %d) exited" % app.pid in d.text(), d.text())
    print(f"daemon killed and restarted under the app: all {summary['frames']} frames captured")


def thread_names(capture):
    with open(os.path.join(capture, "threads.csv")) as f:
        header = f.readline().strip().split(",")
        name = header.index("thread")
        return {line.strip().split(",")[name] for line in f if line.strip()}


def test_no_daemon(build, demo):
    """No socket: the app starts no thread for the daemon and prints its summary as always."""
    with Weston() as w:
        out_dir = tempfile.mkdtemp(prefix="fscope-capture-")
        r = subprocess.run([demo, "--quiet", "--frames", "30"],
                           env=app_env(build, w, {"FRAMESCOPE_OUTPUT": out_dir}),
                           capture_output=True, text=True, timeout=240)
        check(r.returncode == 0 and "framescope: summary for" in r.stderr, r.stderr[-1500:])
        check("fscope-daemon" not in thread_names(out_dir), thread_names(out_dir))
        # With the daemon the same run has that thread (so the check above can fail).
        state = tempfile.mkdtemp(prefix="fscope-state-")
        d = Daemon(build, w.runtime, state).start()
        try:
            out_dir = tempfile.mkdtemp(prefix="fscope-capture-")
            r = subprocess.run([demo, "--quiet", "--frames", "30"],
                               env=app_env(build, w, {"FRAMESCOPE_OUTPUT": out_dir}),
                               capture_output=True, text=True, timeout=240)
            check(r.returncode == 0, r.stderr[-1500:])
            check("fscope-daemon" in thread_names(out_dir), thread_names(out_dir))
            # FRAMESCOPE_DAEMON=off keeps an app away from a running daemon.
            before = d.text().count("registered")
            r = subprocess.run([demo, "--quiet", "--frames", "30"],
                               env=app_env(build, w, {"FRAMESCOPE_DAEMON": "off"}),
                               capture_output=True, text=True, timeout=240)
            check(r.returncode == 0 and d.text().count("registered") == before, d.text())
        finally:
            d.stop()
    print("no daemon: no thread, the summary as always; FRAMESCOPE_DAEMON=off honoured")


def send(path, payload, fds=()):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    s.connect(path)
    if fds:
        s.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i",
                                                                                  *fds))])
    else:
        s.send(payload)
    return s


def request(kind, pid=0, name=b"", magic=MAGIC, last_ms=0):
    return REQUEST.pack(magic, kind, 0, pid, last_ms, name, b"")


def test_hostile(build, demo):
    """Malformed and hostile messages (short, long, wrong magic, unknown kinds, a pid that is
    not the sender's, a recording that is not one or claims impossible sizes, too many
    descriptors, random bytes): each refused, the daemon alive and answering after all."""
    state = tempfile.mkdtemp(prefix="fscope-state-")
    with Weston() as w:
        d = Daemon(build, w.runtime, state).start()
        try:
            memfd = os.memfd_create("fake")
            header = bytearray(4096)
            header[0:8] = b"FSCRECD\0"
            os.write(memfd, bytes(header))
            huge = os.memfd_create("huge")
            os.ftruncate(huge, 1 << 40)
            null = os.open("/dev/null", os.O_RDONLY)
            cases = [
                (b"", ()), (b"x", ()), (request(LIST) + b"extra", ()),
                (request(LIST, magic=b"NOTMAGIC"), ()), (request(99), ()),
                (request(REGISTER, pid=1), (memfd,)),
                (request(REGISTER, pid=os.getpid()), ()),
                (request(REGISTER, pid=os.getpid()), (null,)),
                (request(REGISTER, pid=os.getpid()), (memfd,)),
                (request(REGISTER, pid=os.getpid()), (huge,)),
                (request(REGISTER, pid=os.getpid()), (memfd, memfd, memfd)),
                (request(SNAPSHOT, pid=2 ** 30), ()),
                (request(SNAPSHOT, name=b"no-such-app"), ()),
            ]
            rng = random.Random(11)
            for _ in range(300):
                n = rng.choice([1, 7, REQUEST.size - 1, REQUEST.size, REQUEST.size + 1, 2000])
                data = bytearray(rng.getrandbits(8) for _ in range(n))
                if n >= REQUEST.size and rng.random() < 0.7:
                    data[0:8] = MAGIC  # past the magic, into the fields
                cases.append((bytes(data), ()))
            for payload, fds in cases:
                s = send(d.path, payload, fds)
                try:
                    s.recv(FSCOPED_REPLY_MAX)
                except (socket.timeout, ConnectionResetError):
                    pass
                s.close()
            check(d.proc.poll() is None, "the daemon died:\n" + d.text()[-3000:])
            check(top(build, w) == [], "a hostile message registered an app")
            for needle in ("registers pid 1 from pid", "sent 0 descriptors", "not a file",
                           "impossible", "sent 3 descriptors", "malformed message",
                           "unknown kind 99"):
                check(needle in d.text(), f"no {needle!r} in:\n{d.text()[-3000:]}")
            snap = cli(build, w, "snapshot", "no-such-app")
            check(snap.returncode == 1 and "no profiled app" in snap.stderr, snap.stderr)
        finally:
            d.stop()
    print(f"{len(cases)} hostile messages refused; the daemon answered after them")


FSCOPED_REPLY_MAX = 256 * 1024


def test_other_user(build, demo):
    """Another user reaching the socket (its directory opened up for the test) is refused by
    SO_PEERCRED: no answer, and the daemon says so."""
    if os.getuid() != 0:
        print("needs root to act as another user")
        sys.exit(SKIP)
    state = tempfile.mkdtemp(prefix="fscope-state-")
    with Weston() as w:
        d = Daemon(build, w.runtime, state).start()
        try:
            os.chmod(w.runtime, 0o755)
            os.chmod(d.dir, 0o755)
            os.chmod(d.path, 0o777)
            code = ("import socket,struct,sys\n"
                    "s=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET);s.settimeout(10)\n"
                    f"s.connect({d.path!r})\n"
                    f"s.send({request(LIST)!r})\n"
                    "print(len(s.recv(300000)))\n")
            out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                  sys.executable, "-c", code], capture_output=True, text=True,
                                 timeout=60)
            check(out.stdout.strip() in ("0", "") and "refused a connection from uid 65534"
                  in d.text(), f"{out.stdout} {out.stderr[-500:]}\n{d.text()}")
            check(top(build, w) == [], "the daemon stopped answering its own user")
        finally:
            d.stop()
    print("uid 65534 refused; uid 0 answered")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def daemon_pid(d):
    # systemd-socket-activate execs the daemon in its own process.
    return d.proc.pid


def test_many(build, demo):
    """Fifty profiled demos at once: each registered, each captured when it ends, only the
    newest --keep captures kept; the daemon's peak memory and CPU time are printed and its
    memory stays bounded (it maps a recording only while reading it)."""
    state = tempfile.mkdtemp(prefix="fscope-state-")
    count, keep = 50, 20
    with Weston() as w:
        d = Daemon(build, w.runtime, state, keep=keep).start()
        try:
            env = app_env(build, w)
            apps = [subprocess.Popen([demo, "--quiet", "--output", "offscreen", "--frames",
                                      "400"], env=env, stderr=subprocess.DEVNULL)
                    for _ in range(count)]
            d.wait_for("registered", timeout=120, count=count)
            listed = top(build, w)
            for a in apps:
                check(a.wait(300) == 0, f"a demo failed: {a.returncode}")
            d.wait_for("; capture ", timeout=300, count=count)
            pid = daemon_pid(d)
            peak, cpu = rss_kib(pid), cpu_s(pid)
        finally:
            d.stop()
    made = captures(state)
    check(len(made) == keep, f"{len(made)} captures kept, --keep {keep}")
    for c in made:
        capture_frames(c)
    check(peak < 128 * 1024, f"the daemon peaked at {peak} KiB with {count} apps")
    print(f"{count} apps: {len(listed)} listed at once at most; {keep} newest captures kept; "
          f"daemon peak RSS {peak / 1024:.1f} MiB, CPU {cpu:.2f} s for {count} analyses")


def test_args(build, demo):
    """Bad arguments to framescoped, top and snapshot: one line, exit status 2, nothing runs."""
    daemon = os.path.join(build, "tools", "framescoped")
    cli_exe = os.path.join(build, "tools", "framescope")
    runtime = tempfile.mkdtemp(prefix="fscope-rt-")
    cases = [[daemon, "--keep", "0"], [daemon, "--keep", "x"], [daemon, "--state-dir", "rel"],
             [daemon, "extra"], [cli_exe, "top", "--interval", "0"], [cli_exe, "top", "x"],
             [cli_exe, "snapshot"], [cli_exe, "snapshot", "a", "b"],
             [cli_exe, "snapshot", "app", "--last", "-1"], [cli_exe, "snapshot", "x" * 80]]
    for argv in cases:
        out = subprocess.run(argv, env=dict(os.environ, XDG_RUNTIME_DIR=runtime),
                             capture_output=True, text=True, timeout=30)
        check(out.returncode == 2 and out.stderr.strip(), f"{argv[1:]}: {out.returncode} "
              f"{out.stderr!r}")
    check(not os.listdir(runtime), "a bad command made a socket")
    out = subprocess.run([cli_exe, "top", "--once"], env=dict(os.environ, XDG_RUNTIME_DIR=runtime),
                         capture_output=True, text=True, timeout=30)
    check(out.returncode == 1 and "framescoped is not running" in out.stderr, out.stderr)
    print(f"{len(cases)} bad command lines refused with status 2; top without a daemon says so")


def test_units(build, demo):
    """The user units pass systemd-analyze verify (pointed at the built daemon)."""
    analyze = shutil.which("systemd-analyze")
    if not analyze:
        print("systemd-analyze not installed")
        sys.exit(SKIP)
    units = tempfile.mkdtemp(prefix="fscope-units-")
    daemon = os.path.join(os.path.abspath(build), "tools", "framescoped")
    for name in ("framescoped.socket", "framescoped.service"):
        with open(os.path.join(build, "systemd", name)) as f:
            text = f.read()
        check(name != "framescoped.service" or "ExecStart=" in text, text)
        lines = [f"ExecStart={daemon}" if l.startswith("ExecStart=") else l
                 for l in text.splitlines()]
        with open(os.path.join(units, name), "w") as f:
            f.write("\n".join(lines) + "\n")
    runtime = tempfile.mkdtemp(prefix="fscope-rt-")
    out = subprocess.run([analyze, "verify", "--user",
                          os.path.join(units, "framescoped.socket"),
                          os.path.join(units, "framescoped.service")],
                         env=dict(os.environ, XDG_RUNTIME_DIR=runtime),
                         capture_output=True, text=True, timeout=60)
    check(out.returncode == 0 and not out.stdout.strip() and not out.stderr.strip(),
          f"systemd-analyze verify: {out.returncode}\n{out.stdout}{out.stderr}")
    print("framescoped.socket and framescoped.service verify clean")


main({"crash": test_crash, "restart": test_restart, "no_daemon": test_no_daemon,
      "hostile": test_hostile, "other_user": test_other_user, "many": test_many,
      "units": test_units, "args": test_args})
