"""Shared pieces of the end-to-end tests: a private headless Weston, running an app under the
layer, and parsing what framescope wrote (summary text, summary.json, frames.csv, trace.json).
"""
import array
import csv
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

SKIP = 77


class TestFailure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


def _read(path, limit=4096):
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode(errors="replace").strip()
    except OSError as e:
        return f"({e.strerror})"


def process_tree(root):
    """root and every process descended from it, by each one's parent in /proc/PID/stat."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _read(f"/proc/{entry}/stat")
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
            fields = stat[stat.rfind(")") + 2:].split()
            if len(fields) > 1 and fields[1].isdigit():
                parents[int(entry)] = int(fields[1])
    tree, grown = [root], True
    while grown:
        grown = False
        for pid, ppid in parents.items():
            if ppid in tree and pid not in tree:
                tree.append(pid)
                grown = True
    return tree


def where_stuck(root):
    """Every thread of root's process tree: its name, state, the kernel function it sleeps in
    and, where readable (root), its kernel stack: what a hung run was waiting on."""
    lines = []
    for pid in process_tree(root):
        lines.append(f"process {pid}: {_read(f'/proc/{pid}/cmdline').replace(chr(0), ' ')}")
        try:
            tids = sorted(os.listdir(f"/proc/{pid}/task"), key=int)
        except OSError:
            continue
        for tid in tids:
            task = f"/proc/{pid}/task/{tid}"
            stat = _read(f"{task}/stat")
            state = stat[stat.rfind(")") + 2:].split()[:1]
            lines.append(f"  thread {tid} {_read(f'{task}/comm')} state {''.join(state)} "
                         f"in {_read(f'{task}/wchan')}")
            stack = _read(f"{task}/stack")
            lines += [f"      {frame}" for frame in stack.splitlines()[:12]]
    return "\n".join(lines)


def run_bounded(argv, timeout, **kwargs):
    """subprocess.run(argv, capture_output=True, text=True, ...), but a run still going after
    timeout seconds fails the test with where each thread of its process tree waits (then the
    tree is killed), so that a hang seen once in CI says what it was."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stuck = where_stuck(proc.pid)
        tree = process_tree(proc.pid)
        for pid in tree:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        out, err = proc.communicate()
        raise TestFailure(f"{' '.join(argv)} still ran after {timeout} s; where it waited:\n"
                          f"{stuck}\nits stderr's end:\n{err[-3000:]}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


class Weston:
    """A headless Weston 10 in its own 0700 runtime directory."""

    def __init__(self, extra_args=()):
        self.extra_args = list(extra_args)

    def __enter__(self):
        if not shutil.which("weston"):
            print("weston not installed")
            sys.exit(SKIP)
        self.runtime = tempfile.mkdtemp(prefix="fscope-test-")
        os.chmod(self.runtime, 0o700)
        self.socket = "fscope-test"
        env = dict(os.environ, XDG_RUNTIME_DIR=self.runtime)
        self.log = open(os.path.join(self.runtime, "weston.log"), "w")
        self.proc = subprocess.Popen(
            ["weston", "--backend=headless-backend.so", f"--socket={self.socket}",
             "--use-pixman", "--idle-time=0"] + self.extra_args,
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        path = os.path.join(self.runtime, self.socket)
        deadline = time.time() + 15
        while not os.path.exists(path):
            if self.proc.poll() is not None or time.time() > deadline:
                raise TestFailure("headless weston did not start: " +
                                  open(os.path.join(self.runtime, "weston.log")).read())
            time.sleep(0.05)
        return self

    def env(self):
        return {"XDG_RUNTIME_DIR": self.runtime, "WAYLAND_DISPLAY": self.socket}

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        shutil.rmtree(self.runtime, ignore_errors=True)


class TestCompositor(Weston):
    """tests/compositor/fscope-test-compositor: several outputs at their own refresh rates."""

    def __init__(self, exe, args):
        self.exe = exe
        self.args = list(args)

    def __enter__(self):
        self.runtime = tempfile.mkdtemp(prefix="fscope-test-")
        os.chmod(self.runtime, 0o700)
        self.socket = "fscope-mixed"
        self.log = open(os.path.join(self.runtime, "compositor.log"), "w")
        self.proc = subprocess.Popen([self.exe, "--socket", self.socket] + self.args,
                                     env=dict(os.environ, XDG_RUNTIME_DIR=self.runtime),
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            raise TestFailure(f"test compositor did not start: {line!r}")
        return self


class Result:
    def __init__(self, proc, capture_dir):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.capture_dir = capture_dir

    def summaries(self):
        return re.findall(r"^framescope: summary for .*$", self.stderr, re.M)

    def summary_line(self, key):
        # The label and at least two spaces: "frames" is not "frames by verdict:".
        m = re.search(r"^  %s {2,}(.*)$" % re.escape(key), self.stderr, re.M)
        return m.group(1) if m else None

    def verdict(self):
        m = re.search(r"^  verdict\s+(\w+)-bound", self.stderr, re.M)
        return m.group(1) if m else None

    def json(self):
        return json.load(open(os.path.join(self.capture_dir, "summary.json")))

    def frames(self):
        with open(os.path.join(self.capture_dir, "frames.csv")) as f:
            return list(csv.DictReader(f))

    def zones(self):
        with open(os.path.join(self.capture_dir, "zones.csv")) as f:
            return list(csv.DictReader(f))

    def trace(self):
        return json.load(open(os.path.join(self.capture_dir, "trace.json")))

    def validation_errors(self):
        text = self.stdout + self.stderr
        return [l for l in text.splitlines() if "Validation Error" in l or "VUID-" in l]


# A packed recording (framescope-capture(5), RECORDING): struct rec_header's fields and
# struct rec_range (src/record/format.h, little-endian x86-64).
HEADER_SIZE_AT, HEADER_USED_AT, HEADER_LAYOUT_AT = 12, 24, 156
LAYOUT_ARENA, LAYOUT_PACKED = 0, 1
RANGE = struct.Struct("<4sIQQQII")  # magic, encoding, offset, raw, stored, item_size, reserved
ENCODING_RAW, ENCODING_ZSTD, ENCODING_ITEMS = 0, 1, 2


def recording_layout(data):
    return struct.unpack_from("<I", data, HEADER_LAYOUT_AT)[0]


def unpack_recording(data):
    """The arena a packed recording.fsr holds, as bytes whose header says so (a recording that
    is its arena, which `framescope report` reads as it reads version 9's): decoded here from
    the format as framescope-capture(5) describes it, with the zstd command for zstd, so that
    the description is checked too. A recording that is an arena already is returned as is."""
    if recording_layout(data) != LAYOUT_PACKED:
        return data
    header_size = struct.unpack_from("<I", data, HEADER_SIZE_AT)[0]
    used = struct.unpack_from("<Q", data, HEADER_USED_AT)[0]
    arena = bytearray(used)
    arena[:header_size] = data[:header_size]
    struct.pack_into("<I", arena, HEADER_LAYOUT_AT, LAYOUT_ARENA)
    at = header_size
    while at < len(data):
        magic, encoding, offset, raw, stored, item, _ = RANGE.unpack_from(data, at)
        check(magic == b"FSRG", f"no range at {at}")
        at += RANGE.size
        payload = data[at:at + stored]
        at += (stored + 7) // 8 * 8
        if encoding != ENCODING_RAW:
            payload = subprocess.run(["zstd", "-d", "-c"], input=payload, capture_output=True,
                                     check=True).stdout
        check(len(payload) == raw, f"the range at {offset} decodes to {len(payload)} bytes, "
              f"not {raw}")
        if encoding == ENCODING_ITEMS:
            words, count = item // 8, raw // item
            planes = array.array("Q", payload)
            out = array.array("Q", bytes(raw))
            for j in range(words):
                total = 0
                for k in range(count):
                    total = (total + planes[j * count + k]) & 0xFFFFFFFFFFFFFFFF
                    out[k * words + j] = total
            payload = out.tobytes()
        arena[offset:offset + raw] = payload
    return bytes(arena)


def layer_env(build_dir, layers="VK_LAYER_FRAMESCOPE"):
    return {
        "VK_ADD_LAYER_PATH": os.path.join(build_dir, "layers", "dev"),
        "VK_INSTANCE_LAYERS": layers,
    }


def run_app(argv, weston, build_dir, extra_env=None, layers="VK_LAYER_FRAMESCOPE",
            capture=True, timeout=240):
    capture_dir = tempfile.mkdtemp(prefix="fscope-capture-") if capture else None
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("FRAMESCOPE") or k in ("VK_INSTANCE_LAYERS", "VK_ADD_LAYER_PATH",
                                               "DISABLE_FRAMESCOPE"):
            del env[k]
    env.update(weston.env() if weston else {})
    if layers:
        env.update(layer_env(build_dir, layers))
    if capture:
        env["FRAMESCOPE_OUTPUT"] = capture_dir
    # Every submission timed, for the tests that check each frame's GPU time exactly; the
    # default, sampled timing has its own tests (test_layer.py, gpu_sampled*), which pass
    # FRAMESCOPE_GPU_SAMPLE="" (the default) or a rate.
    env["FRAMESCOPE_GPU_SAMPLE"] = "all"
    # Every line of the summary, for the tests that read its details; the one-screen summary
    # printed by default has tests of its own (test_layer.py, summary_*).
    env["FRAMESCOPE_SUMMARY"] = "full"
    env.update(extra_env or {})
    # A sanitizer build of the layer inside a program not built with it (vkcube): its
    # runtime must be loaded first (tools/setup.sh sets this for the sanitizer run).
    preload = os.environ.get("FSCOPE_TEST_PRELOAD")
    program = os.path.abspath(shutil.which(argv[0]) or argv[0])
    if preload and layers and not program.startswith(os.path.abspath(build_dir) + os.sep):
        env["LD_PRELOAD"] = preload
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    result = Result(proc, capture_dir)
    if os.environ.get("FSCOPE_TEST_VERBOSE"):
        print(result.stderr)
    return result


def ns(value):
    """'12.345678' or '-1.000001' (ms with six decimals, as frames.csv writes) to integer
    nanoseconds."""
    sign = -1 if value.startswith("-") else 1
    whole, _, frac = value.lstrip("-").partition(".")
    return sign * (int(whole) * 1000000 + int((frac + "000000")[:6]))


BLOCK_COLUMNS = ["acquire_ms", "present_ms", "fence_ms", "semaphore_ms", "idle_ms", "cap_ms",
                 "present_wait_ms"]
DISPLAY_COLUMNS = ["acquire_ms", "present_ms", "present_wait_ms"]
WAIT_COLUMNS = ["fence_ms", "semaphore_ms", "idle_ms"]


def check_capture_consistent(result, expected_frames=None, gpu_track=True):
    """gpu_track: a GPU track must be there (off with FRAMESCOPE_GPU=off)."""
    """The capture's three files agree with each other and with the summary on stderr, and
    every frame's budget partitions it exactly."""
    summary = result.json()
    rows = result.frames()
    trace = result.trace()
    check(summary["frames"] == len(rows),
          f"summary.json frames {summary['frames']} != frames.csv rows {len(rows)}")
    if expected_frames is not None:
        check(len(rows) == expected_frames, f"{len(rows)} frames counted, {expected_frames} presented")
    m = re.match(r"(\d+) in", result.summary_line("frames") or "")
    check(m and int(m.group(1)) == summary["frames"], "stderr summary frames != summary.json")
    for row in rows:
        blocks = sum(ns(row[c]) for c in BLOCK_COLUMNS)
        check(ns(row["cpu_ms"]) + blocks == ns(row["frame_ms"]),
              f"frame {row['frame']}: cpu + blocks != frame ({row})")
        check(ns(row["cpu_ms"]) >= 0, f"frame {row['frame']}: negative cpu")
        # How the blocks split adds up exactly too: present/acquire time is GPU work, display
        # wait or present overhead; fence/semaphore/idle time is GPU working or GPU idle.
        display = sum(ns(row[c]) for c in DISPLAY_COLUMNS)
        split = ns(row["display_gpu_ms"]) + ns(row["display_wait_ms"]) + ns(row["present_overhead_ms"])
        check(split == display, f"frame {row['frame']}: present/acquire split {split} != {display}")
        check(ns(row["display_wait_ms"]) == 0 or ns(row["present_overhead_ms"]) == 0,
              f"frame {row['frame']}: both a display wait and present overhead")
        waits = sum(ns(row[c]) for c in WAIT_COLUMNS)
        check(ns(row["waits_gpu_ms"]) + ns(row["waits_gpu_idle_ms"]) == waits,
              f"frame {row['frame']}: wait split != fence + semaphore + idle")
        check(not row["gpu_busy_ms"] or ns(row["gpu_busy_ms"]) <= ns(row["frame_ms"]),
              f"frame {row['frame']}: gpu busy > frame")
        # The kernel's split of the CPU part, and of the whole frame, add up exactly too.
        if row.get("cpu_busy_ms"):
            split = sum(ns(row[c]) for c in ("cpu_busy_ms", "cpu_starved_ms", "cpu_blocked_ms"))
            check(split == ns(row["cpu_ms"]), f"frame {row['frame']}: kernel split {split} != cpu")
            whole = sum(ns(row[c]) for c in ("oncpu_ms", "runnable_ms", "asleep_ms"))
            check(whole == ns(row["frame_ms"]), f"frame {row['frame']}: kernel {whole} != frame")
    n = len(rows)
    # GPU timing is sampled (FRAMESCOPE_GPU_SAMPLE): a frame outside every timed run has no GPU
    # busy and no verdict in frames.csv, and gpu busy and the verdict are the timed frames'.
    timed = [r for r in rows if r["verdict"]]
    sampled = summary["gpu_sampled"]
    # Where GPU timing slowed the frames it timed, or they were too few to decide, the untimed
    # frames carry the verdict and the blocks (issue 34): their count is the basis then.
    bias = sampled.get("bias")
    untimed_basis = bool(bias and (bias["corrected"] or bias["undecided"]))
    check(sampled["basis_frames"] == (n_untimed := len(rows) - len(timed)) if untimed_basis
          else sampled["basis_frames"] == len(timed),
          f"gpu_sampled.basis_frames {sampled['basis_frames']} != frames.csv rows "
          f"{'without' if untimed_basis else 'with'} a verdict")
    check(all(bool(r["gpu_busy_ms"]) == bool(r["verdict"]) for r in rows),
          "frames.csv: a frame with a verdict but no GPU busy, or the reverse")
    if len(timed) < n:
        check(sampled["sampled"] and sampled["unsampled_frames"] == n - len(timed),
              f"gpu_sampled {sampled} disagrees with frames.csv's {n - len(timed)} unsampled")
    if n:
        mean = lambda col, among=rows: sum(ns(r[col]) for r in among) / len(among) / 1e6
        budget = summary["budget_ms"]
        for key, col in [("cpu", "cpu_ms"), ("acquire", "acquire_ms"),
                         ("present", "present_ms"), ("fence", "fence_ms"), ("cap", "cap_ms")]:
            check(abs(budget[key] - mean(col)) < 1e-5,
                  f"budget_ms.{key} {budget[key]} != mean of frames.csv {mean(col)}")
        if timed:
            # Less what timing added to its frames, where it slowed them.
            less = bias["difference_ms"] if bias and bias["corrected"] else 0.0
            want = max(0.0, mean("gpu_busy_ms", timed) - less)
            check(abs(budget["gpu_busy"] - want) < 1e-5,
                  f"budget_ms.gpu_busy {budget['gpu_busy']} != mean of frames.csv's timed "
                  f"frames {mean('gpu_busy_ms', timed)} less {less}")
        check(abs(summary["frame_ms"]["mean"] - mean("frame_ms")) < 1e-5, "frame_ms.mean mismatch")
        check(abs(sum(summary["verdict"]["shares"].values()) - 1.0) < 1e-5, "shares do not sum to 1")
        # frames.csv gives the timed frames' verdicts; the untimed ones' have no column.
        counted = {v: sum(1 for r in timed if r["verdict"] == v) / max(len(timed), 1)
                   for v in summary["verdict"]["shares"]}
        for v, share in summary["verdict"]["shares"].items():
            check(untimed_basis or abs(counted[v] - share) < 1e-5,
                  f"share of {v} disagrees with frames.csv")
    # The trace: present markers equal frames (one per present), GPU spans on their own track.
    events = trace["traceEvents"]
    presents = [e for e in events if e["ph"] == "i" and e["name"] == "present"]
    threads = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
    gpu_tids = [t for t, name in threads.items() if name.startswith("gpu")]
    gpu_spans = [e for e in events if e["ph"] == "B" and e["tid"] in gpu_tids]
    if gpu_track:
        check(gpu_tids, "no gpu track in trace.json")
        check(len(gpu_spans) > 0, "gpu track has no spans")
    # A span read from a previous lap of a query slot would go back in GPU time; the layer
    # checks every read against the one before on its queue and says so.
    check("older than the one before" not in result.stderr, "stale GPU timestamps read back")
    depth = {}
    for e in events:
        if e["ph"] == "B":
            depth[e["tid"]] = depth.get(e["tid"], 0) + 1
        elif e["ph"] == "E":
            depth[e["tid"]] = depth.get(e["tid"], 0) - 1
            check(depth[e["tid"]] >= 0, f"unmatched E on tid {e['tid']}")
    check(all(v == 0 for v in depth.values()), "unmatched B in trace.json")
    # zones.csv, the aggregated tree: one present zone per present, a gpu row that agrees with
    # the gpu track, and exclusive time never above inclusive.
    zones = result.zones()
    presents_zone = sum(int(z["calls"]) for z in zones if z["path"].endswith("vkQueuePresentKHR"))
    marked = all(x["label"].startswith("frame marks") for x in summary["surfaces"])
    if expected_frames is not None and not marked:
        check(presents_zone == expected_frames,
              f"zones.csv counts {presents_zone} vkQueuePresentKHR calls for {expected_frames}")
    gpu_rows = [z for z in zones if z["thread"].startswith("gpu")]
    check(gpu_rows or not gpu_track, "no gpu row in zones.csv")
    check(sum(int(z["calls"]) for z in gpu_rows) >= len(gpu_spans),
          "gpu row counts fewer spans than the trace holds")
    for z in zones:
        check(float(z["exclusive_ms"]) <= float(z["inclusive_ms"]) + 1e-9, f"exclusive > inclusive: {z}")
    # Per surface, the presentation accounting adds up too.
    for surface in summary["surfaces"]:
        check(surface["requested"] == surface["presented"] + surface["discarded"] + surface["pending"],
              f"surface accounting broken: {surface}")
    return summary, rows, trace, presents


def main(tests):
    name = sys.argv[1]
    try:
        tests[name](*sys.argv[2:])
    except TestFailure as e:
        print("FAIL:", e)
        sys.exit(1)
    print("ok")


LAVAPIPE_MAX_ITERS = 60000  # lavapipe caps all loops of a shader at 65535 iterations


def light_frame_gpu_ms(build, demo):
    """GPU time of the demo's frame with no added GPU work, measured here and now: CPU-bound
    tests put several times this much CPU work in a frame, so the CPU dominates on any GPU."""
    with Weston() as w:
        r = run_app([demo, "--quiet", "--frames", "20", "--output", "offscreen"], w, build)
    check(r.rc == 0, f"measuring run failed: {r.stderr[-2000:]}")
    rows = r.frames()[2:]
    return sum(ns(x["gpu_busy_ms"]) for x in rows) / max(1, len(rows)) / 1e6


def gpu_ms_per_iter(build, demo):
    """GPU time of one --gpu-iters iteration of the demo, measured here and now (offscreen, so
    no display paces it): tests size GPU work from this, never from a fixed count. A frame's
    fixed GPU cost (its pass with no iterations, measured too) is taken off, or the work sized
    from this falls short wherever that cost is a large part of the measured frame."""
    def busy_ms(iters):
        with Weston() as w:
            r = run_app([demo, "--quiet", "--frames", "20", "--output", "offscreen",
                         "--gpu-iters", str(iters)], w, build)
        check(r.rc == 0, f"measuring run failed: {r.stderr[-2000:]}")
        rows = r.frames()[2:]
        return sum(ns(x["gpu_busy_ms"]) for x in rows) / max(1, len(rows)) / 1e6

    fixed = busy_ms(0)
    iters = 400
    while True:
        busy = busy_ms(iters)
        if busy >= 2.0 + fixed or iters >= LAVAPIPE_MAX_ITERS // 2:
            check(busy > fixed, f"the measuring run saw no GPU time for the iterations: "
                  f"{busy} ms with {iters}, {fixed} ms with none")
            return (busy - fixed) / iters
        iters *= 4


def iters_for(build, demo, target_ms):
    """--gpu-iters that make about target_ms of GPU work per frame on this machine."""
    iters = int(target_ms / gpu_ms_per_iter(build, demo)) + 1
    check(iters <= LAVAPIPE_MAX_ITERS, f"this GPU needs {iters} iterations for {target_ms} ms")
    return iters
