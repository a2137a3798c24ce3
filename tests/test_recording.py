#!/usr/bin/env python3
"""The recording outlives the app: `framescope run` analyses it however the app ends, the
capture keeps it, `framescope report` recomputes every output from it, a bad one is refused.

usage: test_recording.py TEST BUILD_DIR"""
import json
import lzma
import os
import random
import re
import resource
import signal
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import (LAYOUT_PACKED, Result, Weston, check, check_capture_consistent,
                       layer_env, main, recording_layout, run_bounded, unpack_recording)

# A bound on how long a run may take, so a broken build fails instead of hanging.
PATIENCE_S = 240
FORMATS = {"json": "summary.json", "csv": "frames.csv", "seconds": "seconds.csv",
           "zones": "zones.csv",
           "trace": "trace.json", "perfetto": "trace.perfetto-trace", "threads": "threads.csv",
           "presentmon": "presentmon.csv",
           "mangohud": "mangohud.csv",
           "html": "report.html"}


def tools(build):
    return (os.path.join(build, "tools", "framescope"),
            os.path.join(build, "tools", "demo", "framescope-demo"))


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FRAMESCOPE") and k not in ("WAYLAND_DISPLAY", "VK_INSTANCE_LAYERS")}
    env["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="fscope-rt-")  # no session: run starts Weston
    env.update(extra or {})
    return env


def framescope_run(build, out, *demo_args, summary=None, run_args=()):
    """The demo under `framescope run`, captured to out."""
    exe, demo = tools(build)
    args = [exe, "run", "--output", out] + list(run_args)
    if summary:
        args += ["--summary", summary]
    # In a sanitizer build a crash is the crash, not AddressSanitizer's report of it.
    sanitizers = {name: os.environ.get(name, "") + ":handle_segv=0"
                  for name in ("ASAN_OPTIONS", "UBSAN_OPTIONS")}
    proc = subprocess.run(args + ["--", demo, "--quiet", *demo_args], capture_output=True,
                          text=True, timeout=PATIENCE_S, env=clean_env(sanitizers))
    return Result(proc, out)


def summary_block(text):
    """The summary as printed: from its first line to the capture line, inclusive."""
    m = re.search(r"^framescope: summary for .*?^  capture .*?\n", text, re.M | re.S)
    return m.group(0) if m else None


def report(build, directory, fmt=None):
    exe, _ = tools(build)
    args = [exe, "report"] + (["--format", fmt] if fmt else []) + [directory]
    return subprocess.run(args, capture_output=True, timeout=PATIENCE_S)


def check_report_reproduces(build, out, printed):
    """`framescope report` gives the summary printed at the end of the run byte for byte, and
    every file of the capture."""
    r = report(build, out)
    check(r.returncode == 0, f"report failed: {r.stderr.decode()}")
    check(r.stdout.decode() == printed,
          f"report differs from the summary printed at exit:\n{r.stdout.decode()}\n---\n{printed}")
    for fmt, name in FORMATS.items():
        r = report(build, out, fmt)
        check(r.returncode == 0, f"report --format {fmt} failed: {r.stderr.decode()}")
        check(r.stdout == open(os.path.join(out, name), "rb").read(),
              f"report --format {fmt} differs from {name}")


def test_death(build, signal_name):
    """The app dies mid-run, with no clean-up of its own (a signal's default action, or a real
    invalid write): the capture is whole and holds exactly the frames it presented."""
    signo = {"kill": signal.SIGKILL, "term": signal.SIGTERM, "int": signal.SIGINT,
             "segv": signal.SIGSEGV}[signal_name]
    out = os.path.join(tempfile.mkdtemp(prefix="fscope-death-"), "capture")
    frames = 45
    r = framescope_run(build, out, "--frames", str(frames), "--die", signal_name)
    check(r.rc == 128 + signo, f"exit status {r.rc}, expected {128 + signo}:\n{r.stderr[-2000:]}")
    m = re.search(r"presented (\d+) frames; dying", r.stderr)
    check(m and int(m.group(1)) == frames, f"the demo did not die as asked:\n{r.stderr[-2000:]}")
    check(f"killed by signal {int(signo)}" in (r.summary_line("ended") or ""),
          f"the summary does not say how the run ended:\n{r.stderr[-2000:]}")
    check(f"died of signal {int(signo)}" in r.stderr and out in r.stderr, r.stderr[-800:])
    check_capture_consistent(r, expected_frames=frames)
    printed = summary_block(r.stderr)
    check(printed, f"no summary printed:\n{r.stderr[-2000:]}")
    check_report_reproduces(build, out, printed)
    print(f"{signal_name}: exit {r.rc}, {frames} frames presented, {frames} in the capture, "
          f"report reproduces it")


def test_external_kill(build):
    """SIGKILL from outside at a moment nobody chose: every frame the capture holds is whole,
    and the frames add up."""
    exe, demo = tools(build)
    out = os.path.join(tempfile.mkdtemp(prefix="fscope-kill-"), "capture")
    proc = subprocess.Popen([exe, "run", "--output", out, "--", demo, "--frames", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=clean_env({"FRAMESCOPE_LOG": "info"}))
    # The layer says when presentation tracking is on: frames are being presented then.
    line = ""
    while "presentation tracking is on" not in line:
        line = proc.stderr.readline()
        check(line, "the demo ended before presenting")
    demo_pid = next(int(p) for p in os.listdir("/proc") if p.isdigit() and
                    open(f"/proc/{p}/comm").read().strip() == "framescope-demo" and
                    int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1]) == proc.pid)
    # Some frames after tracking started, measured by the frames themselves: wait for the
    # recording to hold a few presents' worth of time (at most PATIENCE_S).
    import time
    time.sleep(1.0)
    os.kill(demo_pid, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=PATIENCE_S)
    r = Result(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, line + stderr), out)
    check(r.rc == 128 + signal.SIGKILL, f"exit status {r.rc}:\n{r.stderr[-1500:]}")
    summary, rows, _, _ = check_capture_consistent(r)
    check(summary["frames"] > 0, "no frames in the capture of a killed app")
    check("killed by signal 9" in (r.summary_line("ended") or ""), r.stderr[-1500:])
    print(f"killed from outside after {summary['frames']} frames: the capture adds up")


def test_reproduce(build):
    """Without an observer (only VK_INSTANCE_LAYERS), the app analyses its own recording at
    exit with the same code: its capture keeps the recording and `report` reproduces the
    summary file byte for byte."""
    _, demo = tools(build)
    base = tempfile.mkdtemp(prefix="fscope-self-")
    out = os.path.join(base, "capture")
    summary_file = os.path.join(base, "summary.txt")
    with Weston() as w:
        env = dict(os.environ)
        env.update(w.env())
        env.update(layer_env(build))
        env.update({"FRAMESCOPE_OUTPUT": out, "FRAMESCOPE_SUMMARY": summary_file})
        proc = subprocess.run([demo, "--quiet", "--frames", "30"], env=env, capture_output=True,
                              text=True, timeout=PATIENCE_S)
    check(proc.returncode == 0, proc.stderr[-1500:])
    printed = open(summary_file).read()
    check(printed.startswith("framescope: summary for framescope-demo") and
          "  ended" not in printed, printed)
    check_report_reproduces(build, out, printed)
    # And under framescope run, with the summary to a file.
    out = os.path.join(base, "observed")
    summary_file = os.path.join(base, "observed.txt")
    r = framescope_run(build, out, "--frames", "30", summary=summary_file)
    check(r.rc == 0, r.stderr[-1500:])
    check_report_reproduces(build, out, open(summary_file).read())
    # With rows of frames kept for the last 0.3 s of the run only: the capture's keep.json
    # gives report the same rows.
    out = os.path.join(base, "kept")
    summary_file = os.path.join(base, "kept.txt")
    r = framescope_run(build, out, "--frames", "30", summary=summary_file,
                       run_args=["--keep-minutes", "0.005"])
    check(r.rc == 0, r.stderr[-1500:])
    kept = r.json().get("kept")
    check(kept and kept["frames"] < 30 and os.path.exists(os.path.join(out, "keep.json")),
          f"--keep-minutes 0.005 kept {kept}")
    check_report_reproduces(build, out, open(summary_file).read())
    print("report reproduces the exit summary and every file, with and without an observer, "
          f"and with {kept['frames']} of 30 rows of frames kept")


def test_fork_and_launch(build):
    """A forked child never writes the parent's recording or capture; a program the recorded
    app starts records on its own and writes no capture over the run's."""
    exe, demo = tools(build)
    out = os.path.join(tempfile.mkdtemp(prefix="fscope-fork-"), "capture")
    r = framescope_run(build, out, "--frames", "30", "--fork-child")
    check(r.rc == 0, r.stderr[-1500:])
    check(len(r.summaries()) == 1, f"{len(r.summaries())} summaries:\n{r.stderr[-2000:]}")
    summary, _, _, _ = check_capture_consistent(r, expected_frames=30)
    # A launcher: the first demo records into the run's recording, the second (started after
    # it by the same shell) records on its own and says so in its own summary.
    out = os.path.join(tempfile.mkdtemp(prefix="fscope-launch-"), "capture")
    script = f'"{demo}" --quiet --frames 12 && "{demo}" --quiet --frames 20'
    proc = subprocess.run([exe, "run", "--output", out, "--", "sh", "-c", script],
                          capture_output=True, text=True, env=clean_env(), timeout=PATIENCE_S)
    r = Result(proc, out)
    check(r.rc == 0, r.stderr[-2000:])
    frames = re.findall(r"^  frames\s+(\d+) in", r.stderr, re.M)
    check(sorted(frames) == ["12", "20"], f"two summaries expected (12 and 20): {frames}")
    check(r.json()["frames"] == 12, f"the capture holds {r.json()['frames']} frames, not the "
          f"first program's 12")
    print("fork: one summary, 30 frames; launcher: the capture is the first program's")


def test_bounded_memory(build):
    """A long run streams its frames to disk: the recording's memory in use at the end grows
    far less than the frames it holds (the stream thread wakes once a second, so at most about
    a second of frames and two chunks per array stay in memory). What the stream thread made
    resident ahead of the writers is counted apart: at most its 4 MiB bound
    (src/record/recording.c, PREFAULT_MAX), however slow the machine."""
    exe, demo = tools(build)
    frame_bytes = 792 + 24  # a frame record and its GPU span (src/record/format.h)
    event_bytes = 40  # a wake-up chain event (struct sched_event), recorded as root
    ahead_max = 4 << 20

    def run(frames):
        out = os.path.join(tempfile.mkdtemp(prefix="fscope-long-"), "capture")
        proc = run_bounded([exe, "run", "--summary", "off", "--output", out, "--", demo,
                            "--frames", str(frames), "--present-mode", "mailbox",
                            "--width", "64", "--height", "64"], PATIENCE_S,
                           env=clean_env({"FRAMESCOPE_LOG": "debug",
                                          "FRAMESCOPE_RING_EVENTS": "64"}))
        check(proc.returncode == 0, proc.stderr[-1500:])
        m = re.search(r"held (\d+) KiB in memory at the end \((\d+) KiB of it made resident "
                      r"ahead of use\), (\d+) KiB streamed", proc.stderr)
        fps = re.search(r"frames, [\d.]+ s, ([\d.]+) fps", proc.stdout)
        check(m and fps, f"no memory figures:\n{proc.stderr[-1500:]}")
        summary = json.load(open(os.path.join(out, "summary.json")))
        check(summary["frames"] == frames, "the capture lost frames")
        held, ahead = int(m.group(1)) * 1024, int(m.group(2)) * 1024
        check(0 <= ahead <= min(held, ahead_max), f"{ahead} bytes resident ahead of use, of "
              f"{held} held (at most {ahead_max})")
        after = re.search(r"after the analysis the recording held (\d+) KiB", proc.stderr)
        check(after, f"no figure after the analysis:\n{proc.stderr[-1500:]}")
        added = int(after.group(1)) * 1024 - held
        # What was recorded: the frames, and as root the wake-up chain's events (as many
        # bytes as half the frames' at the demo's rate, where the kernel's rings keep up).
        recorded = frames * frame_bytes + summary["hitches"]["wakeups"]["events"] * event_bytes
        return (held - ahead, ahead, int(m.group(3)) * 1024, float(fps.group(1)), recorded,
                added)

    short_frames = 1500
    short_memory, _, _, fps, short_recorded, short_added = run(short_frames)
    # Long enough that a second of frames, and the last chunk of each array (256 KiB, however
    # few items it holds), are a small part of it on any machine: a sanitizer build beside
    # two busy loops runs the demo at a few hundred frames a second.
    long_frames = max(12 * short_frames, int(fps * 8))
    long_memory, ahead, streamed, _, long_recorded, long_added = run(long_frames)
    grown = long_memory - short_memory
    data = long_recorded - short_recorded
    check(streamed > data / 2, f"only {streamed} bytes streamed of {data} more")
    check(grown < data / 2, f"memory in use grew {grown} bytes for {data} bytes more recorded")
    # The analysis reads the streamed chunks from the stream file, never back into the
    # recording's memory (issue 35: the run was held twice at exit). What the analysis and the
    # capture's packing add to that memory (pages of objects never written, read as zeros) is
    # the same for a long run as for a short one.
    check(long_added - short_added < streamed / 4,
          f"the analysis added {long_added} bytes to the recording's memory after a long run, "
          f"{short_added} after a short one: the {streamed} bytes streamed came back")
    print(f"{short_frames} frames: {short_memory // 1024} KiB in use; {long_frames} frames: "
          f"{long_memory // 1024} KiB in use and {ahead // 1024} KiB resident ahead, "
          f"{streamed // 1024} KiB streamed (+{grown // 1024} KiB in use for "
          f"+{data // 1024} KiB of frames and wake-up events); the analysis added "
          f"{short_added // 1024} and {long_added // 1024} KiB to the recording's memory")


def streamed_run_size(probe_stdout):
    """A run's frames sized from the demo's rate, as its probe printed it: three seconds of
    frames (the stream thread writes a batch a second), at least four chunks of them, and two
    chunks of GPU spans (a span a frame: 256 KiB of 24-byte spans a chunk,
    src/record/format.h). Returns the frames and a chunk's spans."""
    fps = float(re.search(r"([\d.]+) fps", probe_stdout).group(1))
    span_chunk = (256 << 10) // 24
    return max(int(fps * 3), 4 * 600, 2 * span_chunk + 1), span_chunk


def check_read_ahead(stderr, whose, span_chunk):
    """The read-ahead's debug line at the exit (whose: "it" in the app, "the recording" under
    run): every frame the app's stream thread moved was read ahead as it was, and the exit
    took those, not the stream file's copy; every other item read ahead adopted; and the first
    of two whole chunks of GPU spans (sealed a second or more before the end) among them.
    Returns the frames, items and spans adopted."""
    moved = re.search(r"the stream thread moved \d+ chunks \((\d+) frames\)", stderr)
    ahead = re.search(rf"(\d+) frames of {whose} read ahead as they were streamed, of (\d+) "
                      r"taken, and (\d+) other items, of (\d+) taken \((\d+) GPU spans, of "
                      r"(\d+)\)", stderr)
    check(moved and ahead, f"no read-ahead figures:\n{stderr[-1500:]}")
    streamed_frames, adopted, taken, items_adopted, items_taken, spans_adopted, spans_taken = (
        int(moved.group(1)), *(int(g) for g in ahead.groups()))
    check(streamed_frames > 0 and adopted == taken == streamed_frames,
          f"{streamed_frames} frames streamed, {taken} read ahead, {adopted} of them adopted")
    check(items_adopted == items_taken, f"{items_taken} command buffer recordings, GPU spans "
          f"and other items read ahead, {items_adopted} of them adopted")
    check(spans_taken >= span_chunk and spans_adopted == spans_taken,
          f"{spans_taken} GPU spans read ahead, {spans_adopted} adopted")
    return adopted, items_adopted, spans_adopted


def test_self_streamed(build):
    """Without an observer, the app streams its long run to disk too and reads it back at its
    own exit: the capture holds every frame and report reproduces it."""
    _, demo = tools(build)
    base = tempfile.mkdtemp(prefix="fscope-selfstream-")
    args = [demo, "--frames", "1000", "--present-mode", "mailbox", "--width", "64",
            "--height", "64"]

    def run(argv, out, summary_file):
        with Weston() as w:
            env = dict(os.environ)
            env.update(w.env())
            env.update(layer_env(build))
            # Every submission timed: a GPU span a frame, read ahead too (the span logs share
            # one sorter, recording_early.c).
            env.update({"FRAMESCOPE_OUTPUT": out, "FRAMESCOPE_SUMMARY": summary_file,
                        "FRAMESCOPE_LOG": "debug", "FRAMESCOPE_RING_EVENTS": "64",
                        "FRAMESCOPE_GPU_SAMPLE": "all"})
            proc = subprocess.run(argv, env=env, capture_output=True, text=True,
                                  timeout=PATIENCE_S)
        check(proc.returncode == 0, proc.stderr[-1500:])
        return proc

    proc = run(args, os.path.join(base, "probe"), os.path.join(base, "probe.txt"))
    frames, span_chunk = streamed_run_size(proc.stdout)
    out, summary_file = os.path.join(base, "capture"), os.path.join(base, "summary.txt")
    proc = run(args[:1] + ["--frames", str(frames)] + args[3:], out, summary_file)
    m = re.search(r"read back (\d+) KiB of the recording streamed", proc.stderr)
    check(m and int(m.group(1)) > 0, f"nothing was streamed:\n{proc.stderr[-1500:]}")
    # Every frame streamed was read ahead as it was, and the exit took those, not the stream
    # file's copy (the summary that report reproduces below was made from them).
    adopted, items_adopted, spans_adopted = check_read_ahead(proc.stderr, "it", span_chunk)
    summary = json.load(open(os.path.join(out, "summary.json")))
    check(summary["frames"] == frames, f"{summary['frames']} frames of {frames}")
    check_report_reproduces(build, out, open(summary_file).read())
    print(f"{frames} frames, {m.group(1)} KiB streamed and read back at exit, {adopted} frames "
          f"and {items_adopted} other items ({spans_adopted} GPU spans) of it read ahead; "
          f"report reproduces")


def test_run_streamed(build):
    """Under framescope run, the observer reads the command's streamed chunks ahead as its
    stream thread writes them (recording_follow.c), and its exit takes those: the summary and
    every file of the capture are still what report computes from recording.fsr, which it
    reads without any read-ahead."""
    exe, demo = tools(build)
    base = tempfile.mkdtemp(prefix="fscope-runstream-")
    # Every submission timed: a GPU span a frame, read ahead into the sorter the span logs
    # share.
    env = clean_env({"FRAMESCOPE_LOG": "debug", "FRAMESCOPE_RING_EVENTS": "64",
                     "FRAMESCOPE_GPU_SAMPLE": "all"})

    def run(frames, out):
        # The summary on stderr, whole between the debug log's lines.
        proc = subprocess.run([exe, "run", "--output", out, "--", demo, "--frames", str(frames),
                               "--present-mode", "mailbox", "--width", "64", "--height", "64"],
                              capture_output=True, text=True, timeout=PATIENCE_S, env=env)
        check(proc.returncode == 0, proc.stderr[-1500:])
        return proc

    proc = run(600, os.path.join(base, "probe"))
    frames, span_chunk = streamed_run_size(proc.stdout)
    out = os.path.join(base, "capture")
    proc = run(frames, out)
    adopted, items_adopted, spans_adopted = check_read_ahead(proc.stderr, "the recording",
                                                             span_chunk)
    summary = json.load(open(os.path.join(out, "summary.json")))
    check(summary["frames"] == frames, f"{summary['frames']} frames of {frames}")
    check_report_reproduces(build, out, summary_block(proc.stderr))
    print(f"{frames} frames under run: {adopted} frames and "
          f"{items_adopted} other items ({spans_adopted} GPU spans) read ahead and adopted; "
          f"report reproduces")


def test_compact(build):
    """A long run at a high frame rate keeps a compact recording (issue 35, item 3): the demo
    at 16x16 offscreen, under the layer alone, runs long enough that its stream thread moves
    sealed chunks to disk; the capture's recording.fsr and the stream file each hold at most
    200 bytes a frame, and report reproduces summary.json from the capture byte for byte.
    True by the encoding, not the machine's speed: a frame's record (792 bytes) and GPU span
    are stored as their differences from the frame before, which take the same bytes at any
    rate; what is recorded a second rather than a frame (the kernel's samples, 10 a second a
    thread) is a few bytes a frame above 1,000 fps, and the run is at least 10,000 frames, so
    the header and tables recorded once (~30 KiB packed) are a few bytes a frame too."""
    _, demo = tools(build)
    base = tempfile.mkdtemp(prefix="fscope-compact-")
    args = [demo, "--output", "offscreen", "--width", "16", "--height", "16"]

    def run(frames, out):
        env = clean_env(dict(layer_env(build), FRAMESCOPE_OUTPUT=out, FRAMESCOPE_SUMMARY="off",
                             FRAMESCOPE_LOG="debug"))
        proc = run_bounded(args + ["--frames", str(frames)], PATIENCE_S, env=env)
        check(proc.returncode == 0, proc.stderr[-1500:])
        return proc

    # The rate, measured here, sizes the run: three seconds of frames (the stream thread
    # wakes each second and a frame chunk is streamed once the next is full).
    proc = run(2000, os.path.join(base, "probe"))
    fps = float(re.search(r"([\d.]+) fps", proc.stdout).group(1))
    frames = max(int(fps * 3), 10000)
    out = os.path.join(base, "capture")
    proc = run(frames, out)
    m = re.search(r"the stream thread moved (\d+) chunks \((\d+) frames\), (\d+) KiB stored "
                  r"in (\d+) KiB; ([\d.]+) ms of its CPU time", proc.stderr)
    check(m, f"no stream figures:\n{proc.stderr[-1500:]}")
    chunks, streamed_frames, raw_kib, stored_kib = (int(m.group(i)) for i in range(1, 5))
    check(chunks > 0 and streamed_frames > 0, f"nothing was streamed:\n{proc.stderr[-1500:]}")
    summary_path = os.path.join(out, "summary.json")
    summary = json.load(open(summary_path))
    # The first present opens the first frame: N presents are N - 1 frames.
    check(summary["frames"] == frames - 1, f"{summary['frames']} frames of {frames}")
    capture_bytes = os.path.getsize(os.path.join(out, "recording.fsr"))
    per_frame = capture_bytes / frames
    stream_per_frame = stored_kib * 1024 / streamed_frames
    check(per_frame <= 200, f"recording.fsr: {capture_bytes} bytes, {per_frame:.0f} a frame")
    check(stream_per_frame <= 200, f"the stream file: {stored_kib} KiB for {streamed_frames} "
          f"frames streamed, {stream_per_frame:.0f} bytes a frame")
    r = report(build, out, "json")
    check(r.returncode == 0 and r.stdout == open(summary_path, "rb").read(),
          f"report --format json differs from summary.json: {r.stderr.decode()[-500:]}")
    print(f"{frames} frames at {fps:.0f} fps: recording.fsr {capture_bytes} bytes "
          f"({per_frame:.1f} a frame); {chunks} chunks ({streamed_frames} frames, {raw_kib} KiB) "
          f"streamed in {stored_kib} KiB ({stream_per_frame:.1f} a frame) in {m.group(5)} ms of "
          f"the stream thread's CPU; report reproduces summary.json")


def test_previous_version(build):
    """A recording of the previous format (9: tests/golden/recording.fsr.xz, an arena as the
    captures of then kept it) is read: report reproduces the committed summary.json from it.
    One of a format this framescope does not read, older or newer, is refused with one line
    naming its format and those this one reads."""
    exe, _ = tools(build)
    golden = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
    with lzma.open(os.path.join(golden, "recording.fsr.xz")) as f:
        data = f.read()
    version = u32(data, 8)
    check(version == 9, f"the golden recording is of format {version}, not the previous one")
    out = os.path.join(tempfile.mkdtemp(prefix="fscope-old-"), "capture")
    os.mkdir(out)
    path = os.path.join(out, "recording.fsr")
    with open(path, "wb") as f:
        f.write(data)
    r = report(build, out, "json")
    with lzma.open(os.path.join(golden, "json.xz")) as f:
        check(r.returncode == 0 and r.stdout == f.read(),
              f"format 9 not reproduced: {r.returncode} {r.stderr.decode()[-500:]}")
    for other in (8, 11):
        with open(path, "wb") as f:
            f.write(data[:8] + struct.pack("<I", other) + data[12:])
        r = report(build, out)
        lines = r.stderr.decode().strip().splitlines()
        says = f"a recording of format {other}; this framescope reads formats 9 to 10"
        check(r.returncode == 2 and len(lines) == 1 and says in lines[0],
              f"format {other}: {r.returncode} {lines}")
    print("format 9 read as before; formats 8 and 11 refused, naming the formats read")


def mutations(data, rng):
    """Recordings broken the ways a reader must survive: cut, wrong magic or version, sizes
    and offsets that point outside, and random bytes changed."""
    header_used = 24  # offset of `used` in struct rec_header
    directory = 224   # of its directory: entries of 24 bytes (type, reserved, offset, size)
    yield "empty", b""
    yield "truncated header", data[:100]
    yield "bad magic", b"NOTAREC!" + data[8:]
    version = int.from_bytes(data[8:12], "little")
    yield "next version", data[:8] + (version + 1).to_bytes(4, "little") + data[12:]
    yield "used beyond the file", data[:header_used] + (1 << 40).to_bytes(8, "little") + \
        data[header_used + 8:]
    yield "cut in half", data[:len(data) // 2]
    # Each word of the directory's first 16 entries (the ones a run uses) made huge in turn.
    for at in range(directory, directory + 16 * 24, 8):
        yield f"word {at} huge", data[:at] + (0xFFFFFFFFFFFF).to_bytes(8, "little") + data[at + 8:]
    for i in range(60):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 64)):
            at = rng.randrange(len(mutated))
            mutated[at] = rng.randrange(256)
        yield f"random bytes {i}", bytes(mutated)


def test_malformed(build):
    """A recording that is not what the reader expects is refused with one clear line; no
    input crashes `framescope report`."""
    out = os.path.join(tempfile.mkdtemp(prefix="fscope-bad-"), "capture")
    r = framescope_run(build, out, "--frames", "20", summary="off")
    check(r.rc == 0, r.stderr[-1500:])
    data = open(os.path.join(out, "recording.fsr"), "rb").read()
    rng = random.Random(9)  # fixed: a failure reproduces
    refused = 0
    must_refuse = {"empty": "not a framescope recording", "bad magic": "not a framescope recording",
                   "truncated header": "not a framescope recording", "next version": "this framescope reads",
                   "used beyond the file": "holds", "cut in a range": "is cut inside the range",
                   "a range's payload changed": "does not decode to its"}
    check(recording_layout(data) == LAYOUT_PACKED, "the capture's recording is not packed")
    # The packed recording's own damage (framescope-capture(5)): cut inside its first range,
    # and a byte of that range's payload changed (zstd's checksum, or its frame, says so).
    first = (u32(data, 12) + 7) // 8 * 8
    stored = u64(data, first + 24)
    check(u32(data, first + 4) != 0 and stored > 16, "the first range is not compressed")
    middle = first + 40 + stored // 2
    payload = data[:middle] + bytes([data[middle] ^ 0x5A]) + data[middle + 1:]
    extra = [("cut in a range", data[:first + 40 + stored // 2]),
             ("a range's payload changed", payload)]
    for name, broken in extra + list(mutations(data, rng)):
        with open(os.path.join(out, "recording.fsr"), "wb") as f:
            f.write(broken)
        for fmt in (None, "html"):
            res = report(build, out, fmt)
            check(res.returncode in (0, 2), f"{name}: report exit status {res.returncode} "
                  f"(a crash?): {res.stderr.decode()[-500:]}")
            if res.returncode == 2:
                lines = res.stderr.decode().strip().splitlines()
                check(len(lines) == 1 and lines[0].startswith("framescope: "),
                      f"{name}: not one error line: {lines}")
                refused += 1
            if name in must_refuse:
                check(res.returncode == 2 and must_refuse[name] in res.stderr.decode(),
                      f"{name}: not refused as such: {res.returncode} {res.stderr.decode()}")
    check(refused >= 12, f"only {refused} broken recordings refused")
    print(f"{refused} broken recordings refused with one line, none crashed report")


# Where the amplifying mutations write: fields of struct rec_header, rec_dir_entry, chunked,
# rec_frame_log and rec_thread (src/record/format.h, little-endian x86-64).
HEADER_DIR_COUNT = 216
DIRECTORY, DIR_ENTRY_SIZE, DIR_ENTRIES = 224, 24, 1024
OBJ_THREAD, OBJ_FRAME_LOG, OBJ_SPAN_LOG = 3, 4, 5
FRAME_LOG_FRAMES = 328  # the log's struct chunked
SPAN_LOG_SPANS = 0      # struct rec_span_log's
GPU_SPAN_DEVICE = 16    # struct gpu_span's device_id
FRAME_START, FRAME_END = 8, 16  # struct fscope_frame (its size: the frames' item_size)
CHUNKED_CHUNK_ITEMS, CHUNKED_COUNT, CHUNKED_TABLE_OFFSET, CHUNKED_TABLE_CAPACITY = 4, 8, 24, 32
THREAD_STATE, THREAD_SLOT, THREAD_RING_OFFSET, THREAD_RING_MASK, THREAD_RING_HEAD = 0, 40, 64, 72, 80
SLOT_EXTERNAL = 4


def u32(data, at):
    return struct.unpack_from("<I", data, at)[0]


def u64(data, at):
    return struct.unpack_from("<Q", data, at)[0]


def directory_entries(data):
    """(type, offset, size) of each published directory entry."""
    return [struct.unpack_from("<I4xQQ", data, DIRECTORY + DIR_ENTRY_SIZE * i)
            for i in range(u32(data, HEADER_DIR_COUNT))]


def every_entry_names(data, entry):
    """The directory full, every entry naming the same object."""
    out = bytearray(data)
    struct.pack_into("<I", out, HEADER_DIR_COUNT, DIR_ENTRIES)
    for i in range(DIR_ENTRIES):
        struct.pack_into("<I4xQQ", out, DIRECTORY + DIR_ENTRY_SIZE * i, *entry)
    return out


def amplifying(data):
    """Recordings whose objects name the same bytes more than once, each as (name, bytes, what
    the refusal must say). A reader that follows them copies and analyses those bytes once per
    name: a few MiB become GiB."""
    entries = directory_entries(data)
    log = next(e for e in entries if e[0] == OBJ_FRAME_LOG)
    threads = [e for e in entries if e[0] == OBJ_THREAD]
    check(len(threads) >= 2, f"a recording with {len(threads)} thread slots")
    frames = log[1] + FRAME_LOG_FRAMES
    table = u64(data, frames + CHUNKED_TABLE_OFFSET)
    capacity = u64(data, frames + CHUNKED_TABLE_CAPACITY)
    first_chunk = u64(data, table)
    # Every chunk-table entry the first chunk, and frames for every one of them.
    one_chunk = bytearray(data)
    for c in range(capacity):
        struct.pack_into("<Q", one_chunk, table + 8 * c, first_chunk)
    struct.pack_into("<Q", one_chunk, frames + CHUNKED_COUNT,
                     capacity * u32(data, frames + CHUNKED_CHUNK_ITEMS))
    yield "every chunk-table entry names one chunk", one_chunk, "overlaps"
    yield "every directory entry names one frame log", every_entry_names(data, log), "overlaps"
    yield "both (the amplification)", every_entry_names(one_chunk, log), "overlaps"
    # The demo's own thread, its whole ring to be read, named by every entry.
    live = threads[-1]
    whole_ring = bytearray(data)
    struct.pack_into("<Q", whole_ring, live[1] + THREAD_RING_HEAD,
                     2 * (u64(data, live[1] + THREAD_RING_MASK) + 1))
    yield "every directory entry names one thread", every_entry_names(whole_ring, live), "overlaps"
    shared_ring = bytearray(data)
    struct.pack_into("<Q", shared_ring, threads[1][1] + THREAD_RING_OFFSET,
                     u64(data, threads[0][1] + THREAD_RING_OFFSET))
    yield "two threads share a ring", shared_ring, "overlaps"
    chunk_in_header = bytearray(data)
    struct.pack_into("<Q", chunk_in_header, table, 64)
    yield "a chunk inside the header", chunk_in_header, "overlaps"
    misaligned = bytearray(data)
    struct.pack_into("<Q", misaligned, live[1] + THREAD_RING_OFFSET,
                     u64(data, live[1] + THREAD_RING_OFFSET) + 4)
    yield "a ring misaligned by 4", misaligned, "aligned"
    slot = bytearray(data)
    struct.pack_into("<i", slot, live[1] + THREAD_STATE, SLOT_EXTERNAL)
    struct.pack_into("<I", slot, live[1] + THREAD_SLOT, 0x7FFFFFFF)
    yield "a thread slot past an int", slot, "slot"


def costly(data):
    """Recordings that are whole but ask analysis for more work than their size or numbers
    beyond its arithmetic, each as (name, bytes, format, what the report must say)."""
    spans = next(e for e in directory_entries(data) if e[0] == OBJ_SPAN_LOG)
    first_span = u64(data, u64(data, spans[1] + SPAN_LOG_SPANS + CHUNKED_TABLE_OFFSET))
    # summary.json gives each device's GPU time: it asked every id up to the largest.
    far_device = bytearray(data)
    struct.pack_into("<I", far_device, first_span + GPU_SPAN_DEVICE, 0xFFFFFFFF)
    yield "a GPU span on device 4294967295", far_device, "json", '"id": 4294967295'
    # Frames of 2^62 ticks: their sums overflowed int64_t (UBSan in a sanitized build).
    log = next(e for e in directory_entries(data) if e[0] == OBJ_FRAME_LOG)
    frames = log[1] + FRAME_LOG_FRAMES
    first_frame = u64(data, u64(data, frames + CHUNKED_TABLE_OFFSET))
    count = u64(data, frames + CHUNKED_COUNT)
    long_frames = bytearray(data)
    for i in range(count):
        at = first_frame + u32(data, frames) * i  # struct chunked's item_size
        struct.pack_into("<Q", long_frames, at + FRAME_END, u64(data, at + FRAME_START) + 2**62)
    yield "frames of 2^62 ticks", long_frames, None, f"frames      {count} in"


def sanitized(build):
    """The build's -Db_sanitize, from meson's introspection."""
    options = json.load(open(os.path.join(build, "meson-info", "intro-buildoptions.json")))
    return next((o["value"] for o in options if o["name"] == "b_sanitize"), "none")


# Runs a command and prints its exit status, seconds and peak resident bytes. A fresh, small
# interpreter forks it: a child's peak counts what it shared with its parent before exec, and
# this test's own process holds several recordings. Its CPU time is limited (SIGXCPU).
MEASURE = """
import os, resource, sys, time
address_space, cpu_s = int(sys.argv[1]), int(sys.argv[2])
start = time.monotonic()
pid = os.fork()
if pid == 0:
    if address_space:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.execv(sys.argv[3], sys.argv[3:])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), time.monotonic() - start, usage.ru_maxrss * 1024)
"""


def measured_report(build, directory, fmt, address_space, cpu_s=PATIENCE_S):
    """`framescope report` on directory: its exit status, stderr, seconds and peak resident
    bytes."""
    exe, _ = tools(build)
    args = [exe, "report"] + (["--format", fmt] if fmt else []) + [directory]
    proc = subprocess.run([sys.executable, "-c", MEASURE, str(address_space), str(cpu_s)] + args,
                          capture_output=True, text=True, timeout=PATIENCE_S)
    rc, seconds, rss = proc.stdout.split()
    return int(rc), proc.stderr, float(seconds), int(rss)


def test_amplified(build):
    """A recording whose directory or chunk-table entries name the same bytes again, whose
    objects overlap, whose ring is misaligned or whose thread slot does not fit an int is
    refused with one line saying so, and one that asks analysis for more than its size is
    reported, in about the time and memory a real one of its size takes (issue 18, items 7 and
    14). Before, the recording with every directory entry naming one frame log, whose chunk
    table names one chunk throughout, took report 15-37 s and 4.1 GiB; one GPU span on device
    4294967295 kept summary.json's writer busy for more than a minute."""
    out = os.path.join(tempfile.mkdtemp(prefix="fscope-amp-"), "capture")
    r = framescope_run(build, out, "--frames", "20", summary="off")
    check(r.rc == 0, r.stderr[-1500:])
    path = os.path.join(out, "recording.fsr")
    # The arena the capture packs, written back as the recording: its objects are mutated in
    # place (the reader reads an arena as it reads version 9's captures).
    data = unpack_recording(open(path, "rb").read())
    with open(path, "wb") as f:
        f.write(data)
    # The yardstick: the real recording's report, measured here, in the same build.
    rc, err, base_s, base_rss = measured_report(build, out, None, 0)
    check(rc == 0, f"report of the real recording failed: {err}")
    # Outside a sanitizer (whose shadow memory is virtual), a runaway read also meets a limit
    # instead of the machine's memory.
    address_space = 0 if sanitized(build) != "none" else 512 * 2**20 + 4 * len(data)
    allowed_rss = base_rss + 2 * len(data)
    allowed_s = 10 * base_s + 1.0
    print(f"real recording: {len(data)} bytes, report in {base_s:.3f} s, "
          f"{base_rss / 2**20:.1f} MiB resident")
    for name, broken, says in amplifying(data):
        with open(path, "wb") as f:
            f.write(broken)
        for fmt in (None, "trace"):
            rc, err, seconds, rss = measured_report(build, out, fmt, address_space)
            what = f"{name} ({fmt or 'text'})"
            check("runtime error" not in err and "Sanitizer" not in err,
                  f"{what}: a sanitizer spoke:\n{err[-2000:]}")
            lines = err.strip().splitlines()
            check(rc == 2 and len(lines) == 1 and says in lines[0],
                  f"{what}: exit {rc}, not refused with one line saying '{says}': {err[-500:]}")
            check(rss <= allowed_rss, f"{what}: {rss / 2**20:.1f} MiB resident, more than "
                  f"{allowed_rss / 2**20:.1f}")
            check(seconds <= allowed_s, f"{what}: {seconds:.2f} s, more than {allowed_s:.2f}")
            print(f"{what}: refused in {seconds:.3f} s, {rss / 2**20:.1f} MiB: {lines[0]}")
    for name, costly_data, fmt, says in costly(data):
        with open(path, "wb") as f:
            f.write(costly_data)
        rc, err, seconds, rss = measured_report(build, out, fmt, address_space,
                                                int(allowed_s) + 1)
        check(rc == 0 and not err, f"{name}: exit {rc} (-{int(signal.SIGXCPU)}: out of CPU "
              f"time; a sanitizer's report?): {err[-500:]}")
        check(rss <= allowed_rss and seconds <= allowed_s,
              f"{name}: {seconds:.2f} s, {rss / 2**20:.1f} MiB")
        r = report(build, out, fmt)
        check(says in r.stdout.decode(), f"{name}: the report does not say {says}")
        print(f"{name}: reported in {seconds:.3f} s, {rss / 2**20:.1f} MiB")


def test_fd_closing_app(build):
    """An app that closes every descriptor it did not open (3..1023) at start-up, then opens
    four files of its own, which take the numbers the recording's descriptors had, and writes
    8 MiB to each while it marks frames for 3 s (tests/fd-closer): its files hold exactly what
    it wrote, under `framescope run` and on its own. With a soft descriptor limit of 1024 the
    recording's descriptors cannot be moved above the app's range, so the app closes them: the
    layer sees they are no longer its files (by identity, not number), stops streaming and says
    so; with room above 1024 they are there, untouched, and streaming goes on. Before this,
    under `framescope run`, two of the four files got 2,358 bytes of recording each."""
    exe = os.path.join(build, "tools", "framescope")
    closer = os.path.join(build, "tests", "fd-closer")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    limits = [1024] + ([4096] if hard == resource.RLIM_INFINITY or hard >= 4096 else [])
    for limit in limits:
        for observed in (True, False):
            files = tempfile.mkdtemp(prefix="fscope-app-files-")
            argv = ([exe, "run", "--no-capture", "--"] if observed else []) + [closer, files, "3"]

            def lower_limit(limit=limit):
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))

            proc = subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE_S,
                                  env=clean_env(), preexec_fn=lower_limit)
            r = Result(proc, None)
            what = f"limit {limit}, {'under framescope run' if observed else 'on its own'}"
            check(proc.returncode == 0 and "files intact" in proc.stderr,
                  f"{what}: {proc.stderr[-2000:]}")
            check(len(r.summaries()) == 1, f"{what}: no summary:\n{proc.stderr[-2000:]}")
            closed = "the app closed the recording's descriptors" in proc.stderr
            check(closed == (limit == 1024), f"{what}: descriptors closed said: {closed}")
            print(f"{what}: app files intact; recording descriptors "
                  f"{'closed by the app, streaming stopped (said)' if closed else 'above 1023'}")


def test_live_copy(build):
    """A running app's recording copied while it grows (framescoped's copy for `top`) holds
    the header's size from when the copy began, and a chunk table copied later may name chunks
    allocated since, beyond that size (CI once saw `top` refuse such an app: "chunk 1 of the
    frame log ... is outside the recording"). Made so on purpose: a finished recording cut
    at the start of its frame log's third chunk, marked as still recording, reads as the
    frames of the first two chunks, whether its header says the cut or more (copied after
    the rest); the same cut in a finished one is refused."""
    out = os.path.join(tempfile.mkdtemp(prefix="fscope-live-"), "capture")
    r = framescope_run(build, out, "--frames", "1000", "--output", "offscreen", summary="off")
    check(r.rc == 0, r.stderr[-1500:])
    data = unpack_recording(open(os.path.join(out, "recording.fsr"), "rb").read())
    # struct rec_header: used at 24, state at 36, the directory's count at 216 and its entries
    # (type, reserved, offset, size) from 224; struct rec_frame_log's chunked frames at 328.
    entries = struct.unpack_from("<I", data, 216)[0]
    logs = [struct.unpack_from("<IIQQ", data, 224 + 24 * i)[2] for i in range(entries)
            if struct.unpack_from("<IIQQ", data, 224 + 24 * i)[0] == 4]
    check(len(logs) == 1, f"{len(logs)} frame logs")
    _, per, count, _, table, _, streamed = struct.unpack_from("<IIQQQQQ", data, logs[0] + 328)
    chunks = [struct.unpack_from("<Q", data, table + 8 * c)[0] for c in range(-(-count // per))]
    check(count > 2 * per and len(chunks) >= 3 and streamed == 0,
          f"{count} frames in {len(chunks)} chunks of {per}, {streamed} streamed")
    cut = chunks[2]
    results = {}
    # The header's size as the copy began (the cut), or as copied later (the whole: more than
    # the copy holds).
    for state, used, name in ((1, cut, "recording"), (1, len(data), "recording, header later"),
                              (2, cut, "ended")):
        copy = bytearray(data[:cut])
        struct.pack_into("<Q", copy, 24, used)
        struct.pack_into("<I", copy, 36, state)
        with open(os.path.join(out, "recording.fsr"), "wb") as f:
            f.write(copy)
        results[name] = report(build, out)
    for name in ("recording", "recording, header later"):
        live = results[name]
        m = re.search(r"^  frames      (\d+) in ", live.stdout.decode(), re.M)
        check(live.returncode == 0 and m and int(m.group(1)) == 2 * per,
              f"{name}: {live.returncode} {live.stderr.decode()[-500:]} "
              f"{m.group(0) if m else ''}")
    ended = results["ended"]
    check(ended.returncode == 2 and "chunk 2 of the frame log" in ended.stderr.decode() and
          "is outside the recording" in ended.stderr.decode(), ended.stderr.decode()[-500:])
    print(f"cut at frame {2 * per} of {count}: read as {2 * per} frames while recording, "
          f"refused once ended")


main({
    "compact": test_compact,
    "previous_version": test_previous_version,
    "live_copy": test_live_copy,
    "death_kill": lambda b: test_death(b, "kill"),
    "death_term": lambda b: test_death(b, "term"),
    "death_int": lambda b: test_death(b, "int"),
    "death_segv": lambda b: test_death(b, "segv"),
    "external_kill": test_external_kill,
    "reproduce": test_reproduce,
    "fork_and_launch": test_fork_and_launch,
    "malformed": test_malformed,
    "amplified": test_amplified,
    "bounded_memory": test_bounded_memory,
    "self_streamed": test_self_streamed,
    "run_streamed": test_run_streamed,
    "fd_closing_app": test_fd_closing_app,
})
