#!/usr/bin/env python3
"""framescoped under real socket activation (Debian's systemd-socket-activate, the real daemon
binary), with the demo under the layer as a user who enabled it globally would run it: live in
`framescope top`, a snapshot while it runs, its capture after SIGKILL, a daemon restarted or
killed under running apps, no daemon at all, another user, hostile messages, fifty apps.

usage: test_daemon.py TEST BUILD_DIR DEMO"""
import fcntl
import json
import mmap
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
from vkharness import (SKIP, TestFailure, Weston, check, iters_for, layer_env,
                       light_frame_gpu_ms, main, unpack_recording)

MAGIC = b"FSCOPED1"
REQUEST = struct.Struct("=8sIIiI64s256s")  # struct fscoped_request
REGISTER, LIST, SNAPSHOT = 1, 2, 3


class Daemon:
    """framescoped behind systemd-socket-activate on the socket path apps look for: the daemon
    starts on the first connection, as under systemd's framescoped.socket."""

    def __init__(self, build, runtime, state, keep=20, limit_files=None, args=(), group=False,
                 setenv=()):
        self.build, self.runtime, self.state, self.keep = build, runtime, state, keep
        self.limit_files, self.args = limit_files, list(args)
        self.setenv = [a for pair in setenv for a in ("-E", pair)]  # its own environment
        self.group = group  # a process group of its own, as systemd's unit has
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
        # prlimit sets the daemon's descriptor limit (soft and hard) and execs it: the same
        # process, as LISTEN_PID requires.
        limit = (["prlimit", f"--nofile={self.limit_files}:{self.limit_files}"]
                 if self.limit_files else [])
        self.proc = subprocess.Popen(
            [activate, "--seqpacket", "-l", self.path, "-E", f"XDG_STATE_HOME={self.state}"] +
            self.setenv +
            limit + [os.path.join(self.build, "tools", "framescoped"), "--keep", str(self.keep)] +
            self.args,
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=self.group)
        # It binds, then listens: the path appears before a connection is taken, and one made
        # in between is refused. Up when a connection is accepted (it starts the daemon, which
        # reads nothing from it and drops it).
        deadline = time.time() + 30
        while True:
            check(self.proc.poll() is None and time.time() < deadline,
                  "systemd-socket-activate did not listen: " + self.text())
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
                    s.connect(self.path)
                return self
            except (FileNotFoundError, ConnectionRefusedError):
                time.sleep(0.02)

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(10)
        self.log.close()

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_for_jobs(self, timeout=120):
        """Until the daemon has no analysis running (no child process of its own)."""
        deadline = time.time() + timeout
        while True:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                if not f.read().split():
                    return
            check(time.time() < deadline, "the daemon's analyses never ended")
            time.sleep(0.05)

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


def snapshot_kept(build, demo, keep, seconds):
    """A snapshot of the demo with a CPU spike, taken once it has run for seconds."""
    state = tempfile.mkdtemp(prefix="fscope-state-")
    with Weston() as w:
        d = Daemon(build, w.runtime, state, setenv=[keep]).start()
        try:
            app = subprocess.Popen([demo, "--quiet", "--frames", "1000000", "--cpu-spike",
                                    "20:80"], env=app_env(build, w, dict([keep.split("=")])),
                                   stderr=subprocess.PIPE, text=True)
            d.wait_for("registered")
            wait_listed(build, w, app.pid, frames=10)
            # Some seconds of frames (top's frames are the last second's): the spike's
            # frames around it lie well before the last 0.6 s.
            deadline = time.time() + 60 + seconds
            while next(a for a in top(build, w) if a["pid"] == app.pid)["seconds"] < seconds:
                check(time.time() < deadline, f"the app never ran for {seconds} s")
                time.sleep(0.2)
            snap = cli(build, w, "snapshot", str(app.pid))
            check(snap.returncode == 0 and snap.stdout.strip().endswith("-snapshot.capture"),
                  f"snapshot: {snap.returncode} {snap.stdout} {snap.stderr}")
            check(app.poll() is None, "the snapshot stopped the app")
        finally:
            if app.poll() is None:
                app.kill()
                app.wait(30)
            d.stop()
    return snap.stdout.strip()


def test_snapshot_keep(build, demo):
    """A running app whose rows of frames are kept for its last 0.6 s (FRAMESCOPE_KEEP_MINUTES
    =0.01, in the app's environment and the daemon's): a snapshot of all it holds is a whole
    capture, every file there, frames.csv keeping the window and the frames around the hitch
    of a CPU spike, seconds.csv the whole run, and `report` reproduces every file."""
    keep = "FRAMESCOPE_KEEP_MINUTES=0.01"
    capture = snapshot_kept(build, demo, keep, 4)
    with open(os.path.join(capture, "summary.json")) as f:
        k = json.load(f).get("kept") or {}
    if k and k["frames"] == k["of"]:
        # The rows around hitches covered the whole run (60 frames each side of each: a
        # loaded machine's own hitches in a run of a few hundred frames): a longer run, once.
        print(f"every one of {k['of']} frames kept around {k['hitches']} hitches: again, "
              "four times longer")
        capture = snapshot_kept(build, demo, keep, 16)
    files = sorted(os.listdir(capture))
    check(files == sorted(["recording.fsr", "keep.json", "summary.json", "frames.csv",
                           "seconds.csv", "zones.csv", "trace.json", "trace.perfetto-trace",
                           "threads.csv", "presentmon.csv", "mangohud.csv", "report.html"]),
          f"the snapshot's files: {files}")
    with open(os.path.join(capture, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(capture, "frames.csv")) as f:
        kept = [int(line.split(",", 1)[0]) for line in f.readlines()[1:]]
    k = summary.get("kept")
    check(k and k["frames"] == len(kept) < summary["frames"] == k["of"] and
          k["window_minutes"] == 0.01 and k["hitches"] >= 1,
          f"{summary['frames']} frames, {len(kept)} rows kept: {k}")
    check(any(h["frame"] in kept for h in summary["hitches"]["all"]), "no hitch's row kept")
    with open(os.path.join(capture, "seconds.csv")) as f:
        seconds = [line.split(",") for line in f.readlines()[1:]]
    check(sum(int(s[1]) for s in seconds) == summary["frames"] and
          sum(int(s[-1]) for s in seconds) == summary["hitches"]["count"],
          "seconds.csv does not add up to summary.json")
    exe = os.path.join(build, "tools", "framescope")
    for fmt, name in [("json", "summary.json"), ("csv", "frames.csv"), ("seconds", "seconds.csv"),
                      ("zones", "zones.csv"), ("trace", "trace.json"), ("threads", "threads.csv"),
                      ("presentmon", "presentmon.csv"), ("mangohud", "mangohud.csv"),
                      ("html", "report.html")]:
        out = subprocess.run([exe, "report", "--format", fmt, capture], capture_output=True,
                             timeout=120, env={k: v for k, v in os.environ.items()
                                               if not k.startswith("FRAMESCOPE")})
        with open(os.path.join(capture, name), "rb") as f:
            check(out.returncode == 0 and out.stdout == f.read(),
                  f"report --format {fmt} differs from {name}: {out.stderr[-500:]}")
    print(f"snapshot of {summary['frames']} frames: {len(kept)} rows kept, "
          f"{len(seconds)} seconds, every file reproduced by report")


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
            # top answers in time however busy the machine: what framescoped had no time to
            # read is listed unread and says so; every other app shows its frames.
            out = cli(build, w, "top", "--once", "--json")
            with open(d.log_path) as f:
                check(out.returncode == 0, f"top: {out.returncode} {out.stderr}\nframescoped "
                      f"said:\n{f.read()[-2000:]}")
            listed = json.loads(out.stdout)["apps"]
            unread = [a for a in listed if a["error"].startswith("not read: the machine is too")]
            check(all(a["error"] == "" for a in listed if a not in unread),
                  f"top listed apps it could not read: {[a['error'] for a in listed]}")
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
    print(f"{count} apps: {len(listed)} listed by top ({len(unread)} of them unread in time); "
          f"{keep} newest captures kept; "
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


def real_recording(build, weston):
    """The bytes of a real recording of the demo (framescope run's capture keeps it)."""
    out = tempfile.mkdtemp(prefix="fscope-rec-")
    env = dict(os.environ, **weston.env())
    run = subprocess.run([os.path.join(build, "tools", "framescope"), "run", "--summary", "off",
                          "--output", os.path.join(out, "c"), "--",
                          os.path.join(build, "tools", "demo", "framescope-demo"), "--quiet",
                          "--frames", "30"], env=env, capture_output=True, text=True,
                         timeout=120)
    check(run.returncode == 0, f"framescope run: {run.returncode} {run.stderr[-800:]}")
    with open(os.path.join(out, "c", "recording.fsr"), "rb") as f:
        data = unpack_recording(f.read())  # an app's is its arena
    shutil.rmtree(out)
    return data


def recording_memfd(data, sealed=True):
    """A memfd holding data, as large as its header says the arena is (sparse), sealed
    against changes of size as framescope's own are."""
    fd = os.memfd_create("hostile-recording", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, struct.unpack_from("=Q", data, 16)[0])
    os.pwrite(fd, data, 0)
    if sealed:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    return fd


def registrant(path, data, name, exe=b"", sealed=True, flip=None):
    """Forks a process that registers a recording of data under name and stays registered
    until killed (end(pid)): flipping the recording between data and flip meanwhile, when
    given. Returns its pid."""
    pid = os.fork()
    if pid == 0:
        try:
            fd = recording_memfd(data, sealed)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(path)
            s.sendmsg([REQUEST.pack(MAGIC, REGISTER, 0, os.getpid(), 0, name, exe)],
                      [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", fd))])
            if flip is None:
                while True:
                    signal.pause()
            m = mmap.mmap(fd, len(data))
            while True:
                for version in (flip, data):
                    m[:len(version)] = version
        finally:
            os._exit(0)
    return pid


def end(pid):
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def test_hostile_memory(build, demo):
    """Issue 18, items 5 and 6. A recording another process rewrites while the daemon reads
    it (a real one flipped over and over with a corrupted copy of itself), and recordings
    that could shrink under the daemon: the unsealed one refused, the sealed one unshrinkable.
    The daemon answers every top and snapshot meanwhile, and no analysis crashes."""
    state = tempfile.mkdtemp(prefix="fscope-state-")
    with Weston() as w:
        data = real_recording(build, w)
        rng = random.Random(5)
        flip = bytearray(data)
        for at in range(4096, len(flip) - 8, 8):  # past the header: one word in 16 changed
            if rng.random() < 1 / 16:
                flip[at:at + 8] = rng.getrandbits(64).to_bytes(8, "little")
        d = Daemon(build, w.runtime, state).start()
        try:
            unsealed = registrant(d.path, data, b"unsealed", sealed=False)
            d.wait_for("not sealed against shrinking")
            end(unsealed)
            sealed = recording_memfd(data)
            try:
                os.ftruncate(sealed, 4096)
                check(False, "a sealed recording shrank")
            except PermissionError:
                pass
            os.close(sealed)
            pid = registrant(d.path, data, b"flipper", flip=bytes(flip))
            d.wait_for("flipper (pid %d) registered" % pid)
            answered = 0
            for i in range(20):
                apps = top(build, w)
                check(any(a["pid"] == pid for a in apps), f"the flipped app is not listed: "
                      f"{apps}\n{d.text()[-2000:]}")
                answered += 1
                if i % 5 == 0:
                    snap = cli(build, w, "snapshot", str(pid))
                    check(snap.returncode in (0, 1) and snap.stderr.count("\n") <= 1,
                          f"snapshot: {snap.returncode} {snap.stderr}")
            end(pid)
            d.wait_for("flipper (pid %d) exited" % pid)  # the real recording's own end
            d.wait_for_jobs()
            check(d.proc.poll() is None, "the daemon died:\n" + d.text()[-3000:])
            text = d.text()
            check("died of signal" not in text and "deadline" not in text,
                  "an analysis crashed or hung:\n" + text[-3000:])
        finally:
            d.stop()
    print(f"a recording flipped under the daemon: {answered} tops answered, no analysis "
          "crashed; an unsealed recording refused, a sealed one cannot shrink")


def daemon_cpu_s(d):
    return cpu_s(daemon_pid(d))


def silent_connections(path, count):
    """Forks a process holding count connections that never say anything, until killed
    (end(pid)). Returns its pid."""
    pid = os.fork()
    if pid == 0:
        try:
            held = []
            for _ in range(count):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                s.connect(path)
                held.append(s)
            while True:
                signal.pause()
        finally:
            os._exit(0)
    return pid


def test_hostile_clients(build, demo):
    """Issue 18, items 8 and 9. Eighty connections that never speak, from ten processes:
    top is still answered at once (each process holds at most a few; the longest-waiting
    make room; each is closed when it said nothing in time). Then the daemon with 24
    descriptors in all, exhausted by silent connections: it stops listening (said once)
    instead of spinning on accept, and listens again once descriptors are freed."""
    state = tempfile.mkdtemp(prefix="fscope-state-")
    with Weston() as w:
        d = Daemon(build, w.runtime, state).start()
        try:
            top(build, w)  # the daemon runs (socket activation starts it on a connection)
            hogs = [silent_connections(d.path, 8) for _ in range(10)]
            mine = [socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(12)]
            for s in mine:
                s.connect(d.path)
            for _ in range(3):
                start = time.monotonic()
                top(build, w)
                check(time.monotonic() - start < 30, "top waited behind silent connections")
            text = d.text()
            check("to make room" in text and "has 8 waiting already" in text, text[-2000:])
            # Silent connections are closed: ours read EOF.
            mine[-1].settimeout(30)
            check(mine[-1].recv(16) == b"", "a silent connection was kept")
            for pid in hogs:
                end(pid)
            for s in mine:
                s.close()
        finally:
            d.stop()
        # Out of descriptors.
        d = Daemon(build, w.runtime, state, limit_files=24).start()
        try:
            top(build, w)
            hogs = [silent_connections(d.path, 8) for _ in range(4)]
            d.wait_for("out of descriptors")
            before = daemon_cpu_s(d)
            time.sleep(2)
            spent = daemon_cpu_s(d) - before
            check(spent < 0.5, f"the daemon spent {spent:.2f} s of CPU in 2 s out of "
                  "descriptors")
            for pid in hogs:
                end(pid)
            d.wait_for("listening again")
            check(top(build, w) == [], "top after descriptors were freed")
            text = d.text()
            # Said once per exhaustion: once here, unless the hogs' own connections
            # ran it out again while listening resumed.
            check(1 <= text.count("out of descriptors") <= text.count("listening again") + 1,
                  text[-2000:])
        finally:
            d.stop()
    print(f"80 silent connections: top answered; out of descriptors: {spent:.3f} s CPU in 2 s, "
          "listening again once freed")


def test_long_reply(build, demo):
    """Issue 18, items 10 and 11. 400 registered apps whose names and executables are all
    quotes, backslashes and terminal escapes: top's reply (several times a socket's largest
    message) arrives whole and parses, every app in it, no control byte in the table."""
    state = tempfile.mkdtemp(prefix="fscope-state-")
    count = 400
    with Weston() as w:
        data = real_recording(build, w)[:65536]
        d = Daemon(build, w.runtime, state).start()
        children = []
        try:
            name = b'"\\\x1b[2J\n' * 9
            exe = b'"' * 255
            for _ in range(count):
                children.append(registrant(d.path, data, name[:63], exe))
            d.wait_for("registered", timeout=120, count=count)
            out = cli(build, w, "top", "--once", "--json")
            check(out.returncode == 0, f"top: {out.returncode} {out.stderr}")
            size = len(out.stdout)
            apps = json.loads(out.stdout)["apps"]
            check(len(apps) == count and size > 256 * 1024,
                  f"{len(apps)} apps in a reply of {size} bytes")
            check(all("\x1b" not in a["name"] and "\n" not in a["name"] for a in apps),
                  apps[0])
            table = cli(build, w, "top", "--once")
            check(table.returncode == 0 and "\x1b" not in table.stdout and
                  table.stdout.count("\n") == count + 1,
                  f"top's table: {table.returncode} {table.stdout[:500]!r}")
            check("\x1b" not in d.text(), "an escape reached the journal")
        finally:
            for pid in children:
                end(pid)
            d.stop()
    print(f"{count} apps: top's reply of {size} bytes whole; names escaped")


def test_escapes(build, demo):
    """Issue 18, item 11. An app whose name (its executable's, so its comm, its main thread's
    name and its exe) holds a terminal escape and a newline: neither reaches the journal,
    the app's own summary, top, report or framescope run's summary. (Names read from
    /proc/.../comm end at the newline; the exe keeps it.)"""
    state = tempfile.mkdtemp(prefix="fscope-state-")
    bindir = tempfile.mkdtemp(prefix="fscope-evil-")
    evil = os.path.join(bindir, "e\x1b[2J\nfake")
    shutil.copy(demo, evil)
    with Weston() as w:
        d = Daemon(build, w.runtime, state).start()
        try:
            app = subprocess.Popen([evil, "--quiet", "--frames", "1000000"],
                                   env=app_env(build, w), stderr=subprocess.PIPE, text=True)
            d.wait_for("registered")
            wait_listed(build, w, app.pid, frames=5)
            table = cli(build, w, "top", "--once")
            check(table.returncode == 0 and "e\\x1b[2J" in table.stdout and
                  "\x1b" not in table.stdout, f"top: {table.stdout!r}")
            app.send_signal(signal.SIGINT)
            _, err = app.communicate(timeout=120)
            d.wait_for("; capture ")
        finally:
            d.stop()
        made = captures(state)
        check(len(made) == 1, made)
        report = subprocess.run([os.path.join(build, "tools", "framescope"), "report", made[0]],
                                capture_output=True, text=True, timeout=120)
        env = dict(os.environ, **w.env())
        run = subprocess.run([os.path.join(build, "tools", "framescope"), "run", "--output",
                              os.path.join(bindir, "run"), "--", evil, "--quiet", "--frames",
                              "20"], env=env, capture_output=True, text=True, timeout=120)
    outputs = {"the app's summary": err, "the journal": d.text(),
               "report": report.stdout + report.stderr, "run": run.stdout + run.stderr}
    check(report.returncode == 0 and run.returncode == 0, outputs)
    for what, text in outputs.items():
        check("\x1b" not in text and not re.search(r"^fake", text, re.M),
              f"{what} carries the app's escape or forged line:\n{text[-2000:]!r}")
        check("e\\x1b[2J" in text, f"{what} does not name the app:\n"
              f"{text[-2000:]!r}")
    print("an app named with an escape and a newline: escaped in the journal, summary, top, "
          "report and run")


def daemon_children(d):
    try:
        with open(f"/proc/{d.proc.pid}/task/{d.proc.pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except FileNotFoundError:
        return []


def test_hung_analysis(build, demo):
    """Issue 18, items 7 and 15. An analysis that hangs (its process stopped, as a read from a
    hung FUSE or network file leaves it) holds up nobody: top is answered meanwhile, a real app
    registers and is listed, and the hung one is given up at --timeout, said in the journal,
    its snapshot directory not left behind; its client is told it timed out (issue 32, item 6)."""
    state = tempfile.mkdtemp(prefix="fscope-state-")
    with Weston() as w:
        d = Daemon(build, w.runtime, state, args=["--timeout", "3"]).start()
        app = other = None
        try:
            app = subprocess.Popen([demo, "--quiet", "--frames", "1000000"],
                                   env=app_env(build, w), stderr=subprocess.DEVNULL)
            wait_listed(build, w, app.pid, frames=5)
            stopped = None
            for attempt in range(20):
                snap = subprocess.Popen([os.path.join(build, "tools", "framescope"), "snapshot",
                                         str(app.pid)], env=dict(os.environ,
                                                                 XDG_RUNTIME_DIR=w.runtime),
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
                while snap.poll() is None and not stopped:
                    for child in daemon_children(d):
                        try:
                            os.kill(child, signal.SIGSTOP)
                            stopped = child
                        except ProcessLookupError:
                            pass
                if stopped:
                    break
                snap.communicate(timeout=60)
            check(stopped, "no snapshot was analysed in a process of its own")
            hung_at = time.monotonic()
            other = subprocess.Popen([demo, "--quiet", "--frames", "1000000"],
                                     env=app_env(build, w), stderr=subprocess.DEVNULL)
            listed = wait_listed(build, w, other.pid, frames=1)
            waited = time.monotonic() - hung_at
            out, err = snap.communicate(timeout=60)
            check(snap.returncode == 1 and "the snapshot timed out after 3 s" in err and
                  "another user" not in err, f"the hung snapshot's client: "
                  f"{snap.returncode} {out} {err}")
            d.wait_for("exceeded its 3 s deadline")
            check("hung?" not in d.text(), d.text()[-2000:])
            check(d.proc.poll() is None, d.text()[-2000:])
            left = [c for c in captures(state) if c.endswith("-snapshot.capture")]
            check(not left, f"the hung snapshot left {left}")
        finally:
            for p in (app, other):
                if p:
                    p.kill()
                    p.wait(30)
            d.stop()
    print(f"an analysis hung: another app registered and top listed it {waited:.2f} s later; "
          "the hung one killed at its 3 s deadline")


# Where test_sparse_claims writes: struct rec_header's used and directory, struct rec_thread's
# ring (src/record/format.h, little-endian x86-64; tests/test_recording.py names the same).
HEADER_USED, HEADER_DIR_COUNT, DIRECTORY, DIR_ENTRY_SIZE = 24, 216, 224, 24
OBJ_THREAD = 3
THREAD_RING_OFFSET, THREAD_RING_MASK, THREAD_RING_HEAD = 64, 72, 80
EVENT_SIZE = 16  # struct fscope_event


def test_sparse_claims(build, demo):
    """Issue 18, item 7, in the daemon: a registration whose recording is a few MiB of data in
    a sparse memfd (free for its sender) but whose thread ring claims a GiB of its holes. The
    analysis is bounded by what the recording really holds: it fails for want of memory, said
    in the journal, instead of copying a GiB of zeros; the daemon answers meanwhile."""
    options = json.load(open(os.path.join(build, "meson-info", "intro-buildoptions.json")))
    if "address" in next((o["value"] for o in options if o["name"] == "b_sanitize"), "none"):
        # ASan reserves terabytes of address space up front and serves allocations from it:
        # a bound on the address space cannot see what a job allocates.
        print("an AddressSanitizer build: the address-space bound cannot work there")
        sys.exit(SKIP)
    state = tempfile.mkdtemp(prefix="fscope-state-")
    with Weston() as w:
        data = bytearray(real_recording(build, w))
        threads = [struct.unpack_from("<I4xQQ", data, DIRECTORY + DIR_ENTRY_SIZE * i)
                   for i in range(struct.unpack_from("<I", data, HEADER_DIR_COUNT)[0])]
        thread = [t for t in threads if t[0] == OBJ_THREAD][-1][1]
        events = 1 << 26                     # a GiB of events
        ring = 1 << 30                       # far past the data, in the holes
        struct.pack_into("<QQQ", data, thread + THREAD_RING_OFFSET, ring, events - 1, events)
        struct.pack_into("<Q", data, HEADER_USED, ring + events * EVENT_SIZE)
        d = Daemon(build, w.runtime, state).start()
        try:
            pid = registrant(d.path, bytes(data), b"sparse")
            d.wait_for("sparse (pid %d) registered" % pid)
            check(any(a["pid"] == pid for a in top(build, w)), "the sparse app is not listed")
            end(pid)
            d.wait_for("sparse (pid %d) exited; no capture" % pid, timeout=120)
            d.wait_for_jobs()
            text = d.text()
            line = next(l for l in text.splitlines() if "sparse (pid %d) exited" % pid in l)
            check("memory" in line, f"the analysis was not bounded: {line}")
            check(d.proc.poll() is None and top(build, w) == [], text[-2000:])
        finally:
            d.stop()
    print(f"a GiB of holes claimed by {len(data) >> 20} MiB of data: refused for memory ({line})")


# ---- issue 32, item 4: nothing lost unsaid, nothing left behind (and item 6's messages) ----

def process_state(pid):
    """A process's state letter (T: stopped, Z: a zombie), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def wait_state(pid, states, timeout=30):
    deadline = time.time() + timeout
    while process_state(pid) not in states:
        if time.time() >= deadline:
            return False
        time.sleep(0.001)
    return True


def catch_job(d, trigger, timeout=60):
    """trigger() makes the daemon fork a job; the new job is stopped (SIGSTOP, as a read of a
    hung FUSE file leaves it: test_hung_analysis's hook) as soon as it appears. Returns its pid,
    or None when it was done before it could be caught."""
    before = set(daemon_children(d))
    trigger()
    deadline = time.time() + timeout
    while time.time() < deadline:
        for child in daemon_children(d):
            if child in before:
                continue
            try:
                os.kill(child, signal.SIGSTOP)
            except ProcessLookupError:
                continue
            if wait_state(child, ("T", "t", "Z", None)) and process_state(child) in ("T", "t"):
                return child
            return None
        time.sleep(0.001)
    return None


def step_until(pid, condition, timeout=60):
    """Lets a stopped job run a few milliseconds at a time until condition() holds; stopped
    again then. False when the job ended first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
        if process_state(pid) not in ("T", "t"):
            return condition()
        try:
            os.kill(pid, signal.SIGCONT)
            time.sleep(0.002)
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            # It ended (and was reaped) in the few milliseconds it ran.
            return condition()
        wait_state(pid, ("T", "t", "Z", None))
    return False


def temporaries(state):
    base = os.path.join(state, "framescope")
    return sorted(n for n in os.listdir(base) if ".capture.tmp-" in n) \
        if os.path.isdir(base) else []


def empty_captures(state):
    return [c for c in captures(state) if os.path.isdir(c) and not os.listdir(c)]


def writing_capture_job(d, state, data, names):
    """Ends registrants (named from names) until the capture job of one is caught stopped while
    it writes: capture_dir's temporary directory of it exists. Returns (job pid, app name)."""
    for name in names:
        pid = registrant(d.path, data, name)
        d.wait_for("%s (pid %d) registered" % (name.decode(), pid))
        job = catch_job(d, lambda: end(pid))
        if job and step_until(job, lambda: temporaries(state)):
            return job, name.decode()
        if job:
            try:
                os.kill(job, signal.SIGCONT)
            except ProcessLookupError:  # it ended as it ran
                pass
        d.wait_for_jobs()
    check(False, "no capture job was caught while it wrote:\n" + d.text()[-2000:])


def gone(pid, timeout=30):
    """Whether pid is gone (or a zombie nobody reaps yet) within timeout."""
    return wait_state(pid, ("Z", None), timeout)


def test_stop_cleanup(build, demo):
    """Issue 32, item 4. A capture being written when the daemon is stopped as systemd stops it
    (SIGTERM to the whole group), when the daemon alone gets SIGTERM, and when it is killed
    (SIGKILL): the job never runs on without it, the capture's loss is said, and no temporary
    directory (the recording's copy) or empty claimed capture directory is left behind (after
    SIGKILL, the next daemon removes them as it starts)."""
    state = tempfile.mkdtemp(prefix="fscope-state-")
    jobs = []
    with Weston() as w:
        data = real_recording(build, w)
        try:
            for how in ("group", "daemon"):
                d = Daemon(build, w.runtime, state, group=True).start()
                job, name = writing_capture_job(d, state, data,
                                                [b"%s%d" % (how.encode(), i) for i in range(10)])
                jobs.append(job)
                check(temporaries(state) and empty_captures(state),
                      f"{how}: nothing being written: {os.listdir(os.path.join(state, 'framescope'))}")
                if how == "group":
                    os.killpg(d.proc.pid, signal.SIGTERM)
                else:
                    d.proc.send_signal(signal.SIGTERM)
                d.proc.wait(60)
                d.log.close()
                check(gone(job), f"{how}: the job outlived the daemon (state "
                      f"{process_state(job)})")
                text = d.text()
                check(re.search(r"the capture of %s \(pid \d+\): framescoped stopped before it "
                                r"finished; no capture written" % name, text),
                      f"{how}: the lost capture was not said:\n{text[-2000:]}")
                check(not temporaries(state) and not empty_captures(state),
                      f"{how}: left {temporaries(state)} {empty_captures(state)}")
            d = Daemon(build, w.runtime, state).start()
            job, name = writing_capture_job(d, state, data, [b"killed%d" % i for i in range(10)])
            jobs.append(job)
            d.stop(signal.SIGKILL)
            check(gone(job), f"SIGKILL: the job outlived the daemon (state {process_state(job)})")
            check(temporaries(state) and empty_captures(state), "SIGKILL: nothing was left?")
            d = Daemon(build, w.runtime, state).start()
            d.wait_for("removed what a framescoped that was stopped or killed left")
            check(not temporaries(state) and not empty_captures(state),
                  f"the next daemon left {temporaries(state)} {empty_captures(state)}")
            d.stop()
        finally:
            for job in jobs:
                try:
                    os.kill(job, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    print("a capture being written at SIGTERM to the group, SIGTERM to the daemon, SIGKILL: "
          "its job gone with the daemon, its loss said, nothing left behind")


def test_deadline_cleanup(build, demo):
    """Issue 32, items 4 and 6. A capture job killed at its deadline (stopped while writing):
    said as having exceeded its deadline (not "hung?"), its temporary directory and claimed
    directory removed."""
    state = tempfile.mkdtemp(prefix="fscope-state-")
    with Weston() as w:
        data = real_recording(build, w)
        d = Daemon(build, w.runtime, state, args=["--timeout", "5"]).start()
        try:
            job, name = writing_capture_job(d, state, data, [b"slow%d" % i for i in range(10)])
            d.wait_for("the capture of %s (pid" % name)
            d.wait_for("exceeded its 5 s deadline", timeout=120)
            d.wait_for_jobs()
            text = d.text()
            check(re.search(r"the capture of %s \(pid \d+\): it exceeded its 5 s deadline and "
                            r"was killed.*; no capture written" % name, text) and
                  "hung?" not in text, text[-2000:])
            # Removed before the line is said; polled all the same, from the event on.
            deadline = time.time() + 60
            while temporaries(state) or empty_captures(state):
                check(time.time() < deadline,
                      f"left {temporaries(state)} {empty_captures(state)}\n{text[-2000:]}")
                time.sleep(0.05)
        finally:
            d.stop()
    print("a capture job killed at its 5 s deadline: said so, nothing left behind")


def test_keep_claims(build, demo):
    """Issue 32, item 4. --keep 2 counts whole captures only: a capture directory claimed by a
    job still writing (empty) never pushes a real one out. What a killed daemon left is
    removed as the next starts: temporary directories of its naming and empty claims, never
    through a link, never anything else."""
    state = tempfile.mkdtemp(prefix="fscope-state-")
    base = os.path.join(state, "framescope")
    os.makedirs(base)
    stale = os.path.join(base, ".ghost-7-20240101-000000.capture.tmp-0123456789ab")
    os.mkdir(stale)
    with open(os.path.join(stale, "recording.fsr"), "wb") as f:
        f.write(b"\0" * (1 << 20))
    os.mkdir(os.path.join(base, "ghost-8-20240101-000000.capture"))
    outside = tempfile.mkdtemp(prefix="fscope-outside-")
    with open(os.path.join(outside, "recording.fsr"), "w") as f:
        f.write("not ours")
    link = os.path.join(base, ".evil-9-20240101-000000.capture.tmp-abcdefabcdef")
    os.symlink(outside, link)
    other = os.path.join(base, ".notes.tmp-1")
    os.mkdir(other)
    with Weston() as w:
        data = real_recording(build, w)
        d = Daemon(build, w.runtime, state, keep=2).start()
        held = None
        try:
            d.wait_for("removed what a framescoped that was stopped or killed left in %s: "
                       "1 temporary and 1 empty" % base)
            check(not os.path.exists(stale) and os.path.islink(link) and os.path.isdir(other)
                  and os.path.exists(os.path.join(outside, "recording.fsr")),
                  f"start-up removal: {os.listdir(base)} {os.listdir(outside)}")
            for name in (b"first", b"second"):
                pid = registrant(d.path, data, name)
                d.wait_for("%s (pid %d) registered" % (name.decode(), pid))
                end(pid)
                d.wait_for("%s (pid %d) exited: " % (name.decode(), pid))
                d.wait_for_jobs()
            first, second = captures(state)
            for i in range(10):
                pid = registrant(d.path, data, b"held%d" % i)
                d.wait_for("held%d (pid %d) registered" % (i, pid))
                held = catch_job(d, lambda: end(pid))
                if held:
                    break
                d.wait_for_jobs()
            check(held, "no capture job was caught")
            pid = registrant(d.path, data, b"third")
            d.wait_for("third (pid %d) registered" % pid)
            end(pid)
            d.wait_for("third (pid %d) exited: " % pid)
            deadline = time.time() + 60
            while os.path.exists(first):  # third's capture pushes it out
                check(time.time() < deadline and os.path.exists(second),
                      f"--keep 2 with a capture being written: {captures(state)}")
                time.sleep(0.05)
            check(os.path.exists(second) and len(empty_captures(state)) == 1,
                  f"--keep 2 with a capture being written: {captures(state)}")
        finally:
            if held:
                os.kill(held, signal.SIGCONT)
            d.stop()
    print("--keep 2: a claimed directory never counts; a killed daemon's leftovers removed "
          "as the next starts, a link and a stranger's directory kept")


def test_queue(build, demo):
    """Issue 32, items 4 and 6. All four analyses busy (stopped snapshots): top says the
    daemon's own words ("busy"); 65 apps that end meanwhile wait in a queue of 64 and are
    captured as analyses free, and the one that finds the queue full is named in the journal:
    no capture is lost without a line."""
    state = tempfile.mkdtemp(prefix="fscope-state-")
    count = 65
    with Weston() as w:
        data = real_recording(build, w)
        d = Daemon(build, w.runtime, state, keep=200).start()
        stopped, clients, ending = [], [], []
        try:
            target = registrant(d.path, data, b"target")
            d.wait_for("target (pid %d) registered" % target)
            for _ in range(40):
                if len(stopped) == 4:
                    break
                def snapshot():
                    clients.append(subprocess.Popen(
                        [os.path.join(build, "tools", "framescope"), "snapshot", str(target)],
                        env=dict(os.environ, XDG_RUNTIME_DIR=w.runtime),
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
                job = catch_job(d, snapshot)
                if job:
                    stopped.append(job)
            check(len(stopped) == 4, f"caught {len(stopped)} snapshot jobs")
            busy = cli(build, w, "top", "--once")
            check(busy.returncode == 1 and "framescoped is busy" in busy.stderr and
                  'no "apps"' not in busy.stderr, f"top: {busy.returncode} {busy.stderr}")
            busy = cli(build, w, "top", "--once", "--json")
            check(busy.returncode == 1 and "framescoped is busy" in busy.stderr,
                  f"top --json: {busy.returncode} {busy.stdout} {busy.stderr}")
            for i in range(count):
                ending.append((b"q%02d" % i, registrant(d.path, data, b"q%02d" % i)))
            d.wait_for("registered", count=count + 1, timeout=120)
            for _, pid in ending:
                end(pid)
            d.wait_for("captures wait for an analysis already", timeout=120)
            for job in stopped:
                os.kill(job, signal.SIGCONT)
            for c in clients:
                out, err = c.communicate(timeout=120)
                check(c.returncode == 0, f"a snapshot: {c.returncode} {out} {err}")
            d.wait_for("exited: ", count=count - 1, timeout=300)
            d.wait_for_jobs(timeout=300)
            text = d.text()
            dropped = [l for l in text.splitlines() if "captures wait for an analysis" in l]
            check(len(dropped) == 1, dropped)
            for name, pid in ending:
                said = [l for l in text.splitlines() if "%s (pid %d) exited" % (name.decode(), pid)
                        in l]
                check(len(said) == 1 and ("; capture " in said[0] or said[0] in dropped),
                      f"{name}: {said}")
            made = [c for c in captures(state) if re.search(r"/q\d\d-", c)]
            check(len(made) == count - 1, f"{len(made)} captures")
        finally:
            for job in stopped:
                try:
                    os.kill(job, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            for _, pid in ending:
                try:
                    end(pid)
                except (ProcessLookupError, ChildProcessError):
                    pass
            end(target)
            d.stop()
    print(f"four analyses busy: top said so; {count} apps ended: {count - 1} captured from the "
          f"queue, one dropped and named ({dropped[0]})")


def test_agree(build, demo):
    """Issue 36, item 2: one analysis for live, snapshot, exit and report. On the demo's four
    verdicts (display-, CPU-, GPU- and cap-bound), `framescope top` says the verdict the app's
    own capture says; a snapshot's log line says what its summary.json says; and `framescope
    report` on the snapshot recomputes the snapshot (its frames, not the whole recording's)."""
    cpu_ms = max(8.0, 4 * light_frame_gpu_ms(build, demo))
    gpu_iters = iters_for(build, demo, 8.0)
    cases = [
        ("display", ["--present-mode", "fifo", "--frames", "300"], {}),
        ("cpu", ["--present-mode", "mailbox", "--cpu-ms", f"{cpu_ms:.3f}", "--frames",
                 str(int(5000 / cpu_ms))], {}),
        ("gpu", ["--present-mode", "mailbox", "--gpu-iters", str(gpu_iters), "--frames", "600"],
         {}),
        ("cap", ["--present-mode", "mailbox", "--frames", "150"], {"FRAMESCOPE_CAP": "30"}),
    ]
    state = tempfile.mkdtemp(prefix="fscope-state-")
    seen = []
    with Weston() as w:
        d = Daemon(build, w.runtime, state).start()
        try:
            for want, args, env in cases:
                out = tempfile.mkdtemp(prefix="fscope-agree-")
                app = subprocess.Popen([demo, "--quiet"] + args,
                                       env=app_env(build, w, dict(env, FRAMESCOPE_OUTPUT=out)),
                                       stderr=subprocess.PIPE, text=True)
                # Two seconds of frames, so that the live window and the snapshot are full.
                live = wait_listed(build, w, app.pid, frames=1, timeout=60)
                deadline = time.time() + 60
                while live["seconds"] < 2:
                    check(time.time() < deadline and app.poll() is None,
                          f"{want}: the app ended before two seconds: {live}")
                    time.sleep(0.2)
                    live = wait_listed(build, w, app.pid)
                lives = [live] + [wait_listed(build, w, app.pid) for _ in range(2)]
                snap = cli(build, w, "snapshot", str(app.pid), "--last", "1")
                check(snap.returncode == 0, f"{want}: snapshot: {snap.stdout} {snap.stderr}")
                path = snap.stdout.strip()
                _, err = app.communicate(timeout=120)
                check(app.returncode == 0, f"{want}: exit {app.returncode}: {err[-1500:]}")
                with open(os.path.join(out, "summary.json")) as f:
                    own = json.load(f)
                check(own["verdict"]["run"] == want,
                      f"{want}: the app's own capture says {own['verdict']['run']}: "
                      f"{own['verdict']['reason']}")
                check(all(l["verdict"] == want for l in lives),
                      f"{want}: top said {[(l['verdict'], l['verdict_share']) for l in lives]}")
                snap_summary = capture_frames(path)
                line = [l for l in d.text().splitlines()
                        if f"pid {app.pid}): " in l and l.endswith(f"capture {path}")]
                check(len(line) == 1 and
                      f": {snap_summary['frames']} frames, {snap_summary['verdict']['run']}-bound;"
                      in line[0], f"{want}: the daemon said {line}, the snapshot's summary.json "
                      f"{snap_summary['frames']} frames, {snap_summary['verdict']['run']}")
                check(snap_summary["verdict"]["run"] == want,
                      f"{want}: the snapshot says {snap_summary['verdict']['run']}")
                check(snap_summary["frames"] < own["frames"] and
                      snap_summary["duration_s"] < 1.5,
                      f"{want}: the snapshot of the last second holds {snap_summary['frames']} "
                      f"frames over {snap_summary['duration_s']} s of {own['frames']}")
                again = subprocess.run([os.path.join(build, "tools", "framescope"), "report",
                                        "--format", "json", path],
                                       capture_output=True, text=True, timeout=120)
                check(again.returncode == 0, f"{want}: report: {again.stderr[-800:]}")
                recomputed = json.loads(again.stdout)
                check(recomputed["frames"] == snap_summary["frames"] and
                      recomputed["verdict"] == snap_summary["verdict"],
                      f"{want}: report on the snapshot: {recomputed['frames']} frames, "
                      f"{recomputed['verdict']['run']}; its summary.json "
                      f"{snap_summary['frames']}, {snap_summary['verdict']['run']}")
                seen.append(f"{want}: top {lives[-1]['verdict']} "
                            f"({100 * lives[-1]['verdict_share']:.0f}%), snapshot "
                            f"{snap_summary['frames']} frames, exit {own['frames']} frames")
        finally:
            d.stop()
    # A malformed window in a capture is refused, not taken for the whole recording.
    with open(os.path.join(path, "snapshot.json"), "w") as f:
        f.write('{"last_ms": "two"}\n')
    bad = subprocess.run([os.path.join(build, "tools", "framescope"), "report", path],
                         capture_output=True, text=True, timeout=60)
    check(bad.returncode == 2 and "snapshot.json: not a snapshot's window" in bad.stderr,
          f"a malformed snapshot.json: {bad.returncode} {bad.stderr}")
    print("; ".join(seen))


def test_streamed_exit(build, demo):
    """An app that streamed its recording to disk, judged at its own exit (its summary on)
    and captured by the daemon once it is gone: both read the streamed chunks from the stream
    file, and neither changes the recording for the other (issue 35: the app's exit no longer
    brings the chunks back into the recording's memory, and must not leave it claiming them).
    The daemon's capture holds every frame, as the app's summary counted them."""
    with Weston() as w:
        env = app_env(build, w)
        # The rate, measured here, sizes the run: three seconds of frames (the stream thread
        # wakes each second) and at least four chunks of them. A short probe's rate is its
        # start's as much as its frames' (CI once ran the frames it sized at three times its
        # rate, in under a second, and nothing was streamed): a run that streamed nothing is
        # made four times longer, twice at most.
        args = [demo, "--output", "offscreen", "--width", "16", "--height", "16"]
        probe = subprocess.run(args + ["--frames", "600"], env=env, capture_output=True,
                               text=True, timeout=120)
        check(probe.returncode == 0, probe.stderr[-1500:])
        fps = float(re.search(r"([\d.]+) fps", probe.stdout).group(1))
        frames = max(int(fps * 3), 4 * 600)
        for _ in range(3):
            state = tempfile.mkdtemp(prefix="fscope-state-")
            d = Daemon(build, w.runtime, state).start()
            try:
                app = subprocess.run(args + ["--frames", str(frames)],
                                     env=dict(env, FRAMESCOPE_LOG="debug"), capture_output=True,
                                     text=True, timeout=300)
                check(app.returncode == 0, app.stderr[-1500:])
                d.wait_for("; capture ", timeout=120)
            finally:
                d.stop()
            streamed = re.search(r"read back (\d+) KiB of the recording streamed", app.stderr)
            if streamed and int(streamed.group(1)) > 0:
                break
            frames *= 4
    check(streamed and int(streamed.group(1)) > 0, f"nothing was streamed:\n{app.stderr[-1500:]}")
    # The first present opens the first frame: N presents close N - 1.
    said = re.search(r"^  frames +(\d+) ", app.stderr, re.M)
    check(said and int(said.group(1)) == frames - 1, f"the app's summary: {app.stderr[-1500:]}")
    made = captures(state)
    check(len(made) == 1, f"{len(made)} captures")
    summary = capture_frames(made[0])
    check(summary["frames"] == frames - 1, f"the daemon's capture holds {summary['frames']} "
          f"frames, the app's summary {frames - 1}")
    reproduce(build, made[0])
    print(f"{frames} frames, {streamed.group(1)} KiB streamed: the app's summary and the "
          f"daemon's capture both hold every frame")


if __name__ == "__main__":  # test_guide.py imports Daemon from here
    main({"crash": test_crash, "snapshot_keep": test_snapshot_keep, "restart": test_restart,
          "no_daemon": test_no_daemon,
          "hostile": test_hostile, "other_user": test_other_user, "many": test_many,
          "units": test_units, "args": test_args, "hostile_memory": test_hostile_memory,
          "hostile_clients": test_hostile_clients, "long_reply": test_long_reply,
          "escapes": test_escapes, "hung_analysis": test_hung_analysis,
          "sparse_claims": test_sparse_claims, "stop_cleanup": test_stop_cleanup,
          "deadline_cleanup": test_deadline_cleanup, "keep_claims": test_keep_claims,
          "queue": test_queue, "agree": test_agree, "streamed_exit": test_streamed_exit})
