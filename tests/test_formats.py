#!/usr/bin/env python3
"""The capture in other tools' formats, read back as their readers would: the demo under the
layer on a headless Weston, then presentmon.csv and mangohud.csv checked frame by frame against
frames.csv, report.html's data checked against frames.csv and summary.json (its scales, its
GPU series, its hitch groups), and the page opened and photographed in a real headless browser
(Debian's chromium).

trace.perfetto-trace is decoded with protoc (Debian's protobuf-compiler) against the subset of
Perfetto's protos in tests/perfetto/, and every event of trace.json looked for in it.

usage: test_formats.py TEST BUILD_DIR DEMO"""
import csv
import json
import os
import re
import shutil
import bisect
import collections
import struct
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import (SKIP, Weston, check, check_capture_consistent, main, ns, run_app,
                       run_bounded)

PRESENTMON_COLUMNS = [
    "Application", "ProcessID", "SwapChainAddress", "PresentRuntime", "SyncInterval",
    "PresentFlags", "AllowsTearing", "PresentMode", "CPUStartTime", "FrameTime", "CPUBusy",
    "CPUWait", "GPULatency", "GPUTime", "GPUBusy", "GPUWait", "DisplayLatency", "DisplayedTime",
    "AnimationError",
]
MANGOHUD_SYSTEM = "os,cpu,gpu,ram,kernel,driver,cpuscheduler"
MANGOHUD_COLUMNS = ("fps,frametime,cpu_load,gpu_load,cpu_temp,gpu_temp,gpu_core_clock,"
                    "gpu_mem_clock,gpu_vram_used,gpu_power,ram_used,elapsed")


def demo_run(build, demo, mode, frames, extra=()):
    with Weston() as w:
        r = run_app([demo, "--quiet", "--frames", str(frames), "--present-mode", mode] +
                    list(extra), w, build)
    check(r.rc == 0, f"demo exited {r.rc}: {r.stderr[-2000:]}")
    summary, rows, _, _ = check_capture_consistent(r, expected_frames=frames)
    check(summary["presentation"]["tracked"], "presentation not tracked")
    line = r.summary_line("capture") or ""
    for name in ("presentmon.csv", "mangohud.csv", "report.html"):
        check(name in line, f"the summary's capture line does not list {name}: {line}")
    return r, summary, rows


def read_lines(result, name):
    with open(os.path.join(result.capture_dir, name), newline="") as f:
        return f.read().split("\n")


def seconds_ns(value):
    whole, _, frac = value.partition(".")
    return int(whole) * 1000000000 + int((frac + "000000000")[:9])


def signed_ns(value):
    """ns() for values that may be negative (AnimationError)."""
    return -ns(value[1:]) if value.startswith("-") else ns(value)


def microseconds_ns(value):
    whole, _, frac = value.partition(".")
    return int(whole) * 1000 + int((frac + "000")[:3])


def check_presentmon(result, summary, rows, sync_interval, min_shown):
    with open(os.path.join(result.capture_dir, "presentmon.csv"), newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        presents = [dict(zip(header, values)) for values in reader]
    check(header == PRESENTMON_COLUMNS, f"presentmon.csv header: {header}")
    check(len(presents) == len(rows), f"presentmon.csv has {len(presents)} rows, "
          f"frames.csv {len(rows)}")
    shown = [i for i, row in enumerate(rows) if row["present"] == "presented"]
    check(len(shown) >= min_shown, f"only {len(shown)} frames were shown")
    for i, (p, row) in enumerate(zip(presents, rows)):
        where = f"frame {i}"
        check(p["Application"] == summary["app"] and int(p["ProcessID"]) == summary["pid"],
              f"{where}: application {p['Application']} {p['ProcessID']}")
        check(p["PresentRuntime"] == "Vulkan" and p["PresentMode"] == "Other", f"{where}: {p}")
        check(int(p["SyncInterval"]) == sync_interval, f"{where}: SyncInterval {p['SyncInterval']}")
        check(p["GPULatency"] == "NA", f"{where}: GPULatency is not measured but says {p}")
        frame = ns(row["frame_ms"])
        check(ns(p["FrameTime"]) == frame, f"{where}: FrameTime {p['FrameTime']} != frame_ms "
              f"{row['frame_ms']}")
        check(ns(p["CPUBusy"]) == ns(row["cpu_ms"]), f"{where}: CPUBusy != cpu_ms")
        check(ns(p["CPUBusy"]) + ns(p["CPUWait"]) == frame,
              f"{where}: CPUBusy + CPUWait != FrameTime")
        check(ns(p["GPUBusy"]) == ns(row["gpu_busy_ms"]), f"{where}: GPUBusy != gpu_busy_ms")
        check(ns(p["GPUBusy"]) + ns(p["GPUWait"]) == frame,
              f"{where}: GPUBusy + GPUWait != FrameTime")
        check(ns(p["GPUTime"]) == ns(p["GPUBusy"]) + ns(p["GPUWait"]),
              f"{where}: GPUTime != GPUBusy + GPUWait, as PresentMon defines it")
        check(abs(seconds_ns(p["CPUStartTime"]) - ns(row["start_ms"])) <= 1000,
              f"{where}: CPUStartTime {p['CPUStartTime']} s != start_ms {row['start_ms']}")
        if i not in shown:
            check(p["DisplayLatency"] == p["DisplayedTime"] == p["AnimationError"] == "NA",
                  f"{where} was {row['present']}, yet has display times: {p}")
            continue
        # Shown: from the frame's CPU start to the screen, i.e. the frame plus present-to-shown.
        latency = ns(row["frame_ms"]) + ns(row["latency_ms"])
        check(abs(ns(p["DisplayLatency"]) - latency) <= 2000,
              f"{where}: DisplayLatency {p['DisplayLatency']} != frame + latency {latency} ns")
        later = [j for j in shown if j > i]
        if later:
            displayed = ns(rows[later[0]]["presented_ms"]) - ns(row["presented_ms"])
            check(abs(ns(p["DisplayedTime"]) - displayed) <= 2000,
                  f"{where}: DisplayedTime {p['DisplayedTime']} != {displayed} ns to the next")
        else:
            check(p["DisplayedTime"] == "NA", f"{where}: the last frame shown has a DisplayedTime")
        earlier = [j for j in shown if j < i]
        if earlier:
            j = earlier[-1]
            error = (ns(row["start_ms"]) - ns(rows[j]["start_ms"])) - \
                    (ns(row["presented_ms"]) - ns(rows[j]["presented_ms"]))
            check(abs(signed_ns(p["AnimationError"]) - error) <= 4000,
                  f"{where}: AnimationError {p['AnimationError']} != {error} ns")
        else:
            check(p["AnimationError"] == "NA",
                  f"{where}: the first frame shown has an AnimationError")
    return len(shown)


def check_mangohud(result, summary, rows):
    lines = read_lines(result, "mangohud.csv")
    check(lines[0] == MANGOHUD_SYSTEM, f"mangohud.csv line 1: {lines[0]!r}")
    system = dict(zip(MANGOHUD_SYSTEM.split(","), lines[1].split(",")))
    check(len(lines[1].split(",")) == 7, f"mangohud.csv system values: {lines[1]!r}")
    check(system["gpu"] == summary["device"].replace(",", " "), f"gpu {system['gpu']!r}")
    check(system["driver"] == summary["driver"].replace(",", " "), f"driver {system['driver']!r}")
    check(system["ram"].isdigit() and int(system["ram"]) > 0, f"ram {system['ram']!r}")
    check(system["kernel"] == os.uname().release, f"kernel {system['kernel']!r}")
    check(lines[2] == MANGOHUD_COLUMNS, f"mangohud.csv column line: {lines[2]!r}")
    check(lines[-1] == "", "mangohud.csv does not end with a line break")
    samples = [dict(zip(MANGOHUD_COLUMNS.split(","), l.split(","))) for l in lines[3:-1]]
    check(len(samples) == len(rows),
          f"mangohud.csv has {len(samples)} rows, frames.csv {len(rows)}")
    for i, (s, row) in enumerate(zip(samples, rows)):
        frame = ns(row["frame_ms"])
        # MangoHud 0.6.8 writes microseconds; these keep the nanoseconds.
        check(microseconds_ns(s["frametime"]) == frame,
              f"frame {i}: frametime {s['frametime']} us != frame_ms {row['frame_ms']}")
        check(abs(float(s["fps"]) - 1e9 / frame) <= 1e-4 * 1e9 / frame,
              f"frame {i}: fps {s['fps']}")
        load = 100 * ns(row["gpu_busy_ms"]) / frame
        check(abs(int(s["gpu_load"]) - load) <= 0.5 + 1e-9, f"frame {i}: gpu_load {s['gpu_load']}")
        end = ns(row["start_ms"]) + frame
        check(abs(int(s["elapsed"]) - end) <= 1000, f"frame {i}: elapsed {s['elapsed']} != {end}")
        for column in ("cpu_temp", "gpu_temp", "gpu_core_clock", "gpu_mem_clock",
                       "gpu_vram_used", "gpu_power"):
            check(s[column] == "0", f"frame {i}: {column} is not measured but says {s[column]}")
    check_mangohud_process(summary, samples)


def check_mangohud_process(summary, samples):
    """cpu_load and ram_used (issue 36, item 4a: both were 0 in every row): the app's own CPU
    load in percent of one CPU and its resident set in GiB, in every row, agreeing with
    summary.json's threads (time on a CPU over their sampled seconds) and resident set."""
    threads = summary["threads"]
    check(threads, "summary.json has no threads: the kernel sampler did not run")
    expected_load = 100 * sum(t["oncpu_ms"] for t in threads) / 1000 / \
        max(t["seconds"] for t in threads)
    loads = [float(s["cpu_load"]) for s in samples]
    check(all(0 < load < 100 * (os.cpu_count() or 1) + 1 for load in loads),
          f"cpu_load out of (0, {100 * (os.cpu_count() or 1)}]: {sorted(set(loads))[:10]}")
    # Rows are frames: weighted by their frame time, their loads cover the run's time.
    weights = [float(s["frametime"]) for s in samples]
    mean_load = sum(l * w for l, w in zip(loads, weights)) / sum(weights)
    check(abs(mean_load - expected_load) <= 2 + 0.25 * expected_load,
          f"mangohud.csv's cpu_load averages {mean_load:.2f}% over the frames, summary.json's "
          f"threads {expected_load:.2f}% of one CPU")
    process = summary["engine"]["process"]
    peak = process["rss_peak_bytes"]
    check(peak > 0, f"summary.json has no resident set: {process}")
    ram = [float(s["ram_used"]) * 2**30 for s in samples]
    # Six decimals of a GiB: within 1 KiB of a sample.
    check(all(0 < r <= peak + 1024 for r in ram),
          f"ram_used out of (0, peak {peak} B]: {min(ram):.0f}..{max(ram):.0f} B")
    check(max(ram) >= peak / 2, f"ram_used at most {max(ram):.0f} B, the run's peak {peak} B")
    print(f"mangohud.csv: cpu_load {mean_load:.2f}% (summary.json {expected_load:.2f}%), "
          f"ram_used {min(ram) / 2**20:.1f}..{max(ram) / 2**20:.1f} MiB "
          f"(peak {peak / 2**20:.1f} MiB)")


def test_csv(build, demo):
    # FIFO shows nearly every frame: display times to compare.
    r, summary, rows = demo_run(build, demo, "fifo", 60)
    shown = check_presentmon(r, summary, rows, sync_interval=1, min_shown=30)
    check_mangohud(r, summary, rows)
    # Mailbox at full speed discards frames: those must have no display times.
    r, summary, rows = demo_run(build, demo, "mailbox", 200)
    discarded = sum(1 for row in rows if row["present"] == "discarded")
    check(discarded, "mailbox discarded nothing")
    shown_mailbox = check_presentmon(r, summary, rows, sync_interval=0, min_shown=1)
    check_mangohud(r, summary, rows)
    print(f"presentmon.csv and mangohud.csv agree with frames.csv: fifo 60 frames ({shown} "
          f"shown), mailbox 200 frames ({shown_mailbox} shown, {discarded} discarded)")


# The run report.html is checked on: GPU-bound (lavapipe's fragment work outlasts the
# frame's CPU part many times), and two spikes many times its frame (a CPU spike, a sleep)
# so that it has hitches of more than one cause.
RICH_FRAMES = 300
RICH_ARGS = ["--gpu-iters", "4000", "--cpu-spike", "100:150", "--stall-at", "200",
             "--stall-ms", "150"]


def rich_run(build, demo):
    return demo_run(build, demo, "mailbox", RICH_FRAMES, RICH_ARGS)


def page_data(page):
    """report.html's embedded data, as its script reads it."""
    html = open(page).read()
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    check(m, "no embedded data")
    return html, json.loads(m.group(1))


def chromium(page, *args):
    """Debian's chromium, headless, on page: as root (no sandbox), with no network and a
    profile of its own, killed with every process it started when it runs for two minutes."""
    profile = tempfile.mkdtemp(prefix="fscope-chromium-")
    try:
        proc = run_bounded(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", f"--user-data-dir={profile}"] + list(args) + ["file://" + page],
            timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    check(proc.returncode == 0, f"chromium exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc


def dump_dom(page):
    """The page's DOM after its scripts ran, as Debian's chromium renders it headless."""
    return chromium(page, "--dump-dom").stdout


def read_png(path):
    """(width, height, pixels as (r, g, b) tuples) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG")
    at, compressed, header = 8, [], None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        at += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            compressed.append(body)
    check(header, f"{path} has no IHDR")
    width, height, depth, color, _, _, interlace = header
    check(depth == 8 and color in (2, 6) and not interlace, f"{path}: PNG header {header}")
    step = 3 if color == 2 else 4
    raw, stride = zlib.decompress(b"".join(compressed)), width * step
    pixels, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up, corner = previous[i], previous[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                guess = min((abs(p - left), 0, left), (abs(p - up), 1, up),
                            (abs(p - corner), 2, corner))[2]
                line[i] = (line[i] + guess) & 255
        pixels.extend(zip(line[0::step], line[1::step], line[2::step]))
        previous = line
    return width, height, pixels


def body_attributes(dom):
    m = re.search(r"<body([^>]*)>", dom)
    check(m, f"no body in the DOM: {dom[:500]}")
    return dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))


def status_text(dom):
    m = re.search(r'<p id="status">([^<]*)</p>', dom)
    return m.group(1) if m else None


def check_axis(name, axis, values):
    """A gauge's axis scaled to what it shows (issue 33): it covers the values, in a whole
    number of round steps, and spans at most about twice their range plus a margin of a
    quarter of the largest (a ceiling of its own, 60 Hz or the machine's RAM, does not)."""
    low, high = min(values), max(values)
    check(axis and axis["step"] > 0, f"{name}: no axis: {axis}")
    check(axis["min"] <= low + 1e-9 * high and axis["max"] >= high * (1 - 1e-9),
          f"{name}: axis {axis} does not cover the run's {low}..{high}")
    check(axis["min"] >= 0, f"{name}: axis {axis} below 0")
    steps = (axis["max"] - axis["min"]) / axis["step"]
    check(abs(steps - round(steps)) < 1e-6 and 2 <= round(steps) <= 8,
          f"{name}: axis {axis} is {steps} steps")
    check(axis["max"] - axis["min"] <= 2.5 * (high - low) + 0.25 * high,
          f"{name}: axis {axis} is not scaled to the run's {low}..{high}")


def test_html_data(build, demo):
    """report.html's data, read as its script reads it (issue 33, item 4): the frame rate's
    and the resident set's axes over the run's own values, the GPU busy series per frame
    equal to frames.csv's, one time axis (the frames' starts in seconds from the first),
    and the hitches grouped by cause, the worst first."""
    r, summary, rows = rich_run(build, demo)
    _, data = page_data(os.path.join(r.capture_dir, "report.html"))
    columns, gauges = data["columns"], data["gauges"]
    check(columns["frames_per_column"] == [1] * len(rows),
          f"{len(rows)} frames are not one a column: {columns['frames_per_column'][:20]}")
    # One time axis: a column starts where its frame does, in the same seconds as the gauges.
    for i, row in enumerate(rows):
        start = float(row["start_ms"])
        check(abs(columns["start"][i] - start) <= 1e-3 and
              abs(gauges["frames"]["start_s"][i] * 1000 - start) <= 1e-3,
              f"frame {i}: starts at {start} ms, columns say {columns['start'][i]} ms, "
              f"gauges {gauges['frames']['start_s'][i]} s")

    # Frame rate: every frame's, from the slowest to the fastest, within the axis.
    rates = [1000 / float(row["frame_ms"]) for row in rows if float(row["frame_ms"]) > 0]
    fps_axis = gauges["frames"]["axis"]
    check_axis("frame rate", fps_axis, rates)
    check(max(gauges["frames"]["fps"]) <= fps_axis["max"] and
          min(gauges["frames"]["fps"]) >= fps_axis["min"], "the fps series leaves its axis")
    # RSS: the process's own samples, not the machine's RAM.
    rss = gauges["rss"]["bytes"]
    check(rss and len(rss) == len(gauges["rss"]["t"]), f"no resident set: {gauges['rss']}")
    check_axis("RSS", gauges["rss"]["axis"], rss)
    check(gauges["rss"]["axis"]["max"] < gauges["ram_bytes"] or not gauges["ram_bytes"],
          f"RSS drawn against the machine's RAM: {gauges['rss']['axis']}")

    # GPU busy per frame in "where each frame went", as frames.csv has it (null: not timed,
    # which frames.csv leaves empty or 0).
    gpu = columns["gpu_busy"]
    check(len(gpu) == len(rows), f"{len(gpu)} GPU busy values for {len(rows)} frames")
    for i, (value, row) in enumerate(zip(gpu, rows)):
        csv_value = float(row["gpu_busy_ms"] or 0)
        check(abs((value or 0) - csv_value) <= 1e-4 and (value is not None or not csv_value),
              f"frame {i}: GPU busy {value} in the page, {row['gpu_busy_ms']!r} in frames.csv")
    timed = [v for v in gpu if v]
    check(len(timed) >= len(rows) // 2, f"only {len(timed)} of {len(rows)} frames GPU-timed")
    busy = sum(timed) / sum(float(row["frame_ms"]) for row, v in zip(rows, gpu) if v)
    check(busy >= 0.5, f"GPU busy {busy:.0%} of the frame in a run with {RICH_ARGS[1]} "
          f"iterations: the GPU series is not the run's")

    # Hitches: one group per cause, every hitch in exactly one, the worst first.
    hitches, groups = data["hitches"], data["hitch_groups"]
    check(len(hitches) == summary["hitches"]["count"] and hitches,
          f"{len(hitches)} hitches in the page, {summary['hitches']['count']} in summary.json")
    check(sum(g["count"] for g in groups) == len(hitches),
          f"groups hold {sum(g['count'] for g in groups)} of {len(hitches)} hitches")
    check(sorted(i for g in groups for i in g["hitches"]) == list(range(len(hitches))),
          "the groups do not hold each hitch once")
    check(len({g["cause"] for g in groups}) == len(groups), "a cause in two groups")
    for g in groups:
        members = [hitches[i] for i in g["hitches"]]
        check(g["count"] == len(members) and all(h["cause"] == g["cause"] for h in members),
              f"group {g['cause']}: {members}")
        durations = [h["frame_ms"] for h in members]
        check(durations == sorted(durations, reverse=True), f"group {g['cause']} is not "
              f"worst first: {durations}")
        excess = sum(h["excess_ms"] for h in members)
        check(abs(g["excess_ms"] - excess) <= 1e-3 * len(members) + 1e-3,
              f"group {g['cause']}: excess {g['excess_ms']} != its hitches' {excess}")
    worst = [hitches[g["hitches"][0]]["frame_ms"] for g in groups]
    check(worst == sorted(worst, reverse=True), f"groups not worst first: {worst}")
    check(worst[0] == max(h["frame_ms"] for h in hitches), "the worst hitch is not first")
    print(f"report.html's data: fps axis {fps_axis['min']:g}..{fps_axis['max']:g} over "
          f"{min(rates):.1f}..{max(rates):.1f}; RSS axis {gauges['rss']['axis']['min'] / 2**20:g}"
          f"..{gauges['rss']['axis']['max'] / 2**20:g} MiB over {min(rss) / 2**20:.1f}.."
          f"{max(rss) / 2**20:.1f}; GPU busy {busy:.0%} of the frame, per frame as in "
          f"frames.csv; {len(hitches)} hitches in {len(groups)} groups: " +
          ", ".join(f"{g['cause']} {g['count']}" for g in groups))


def screenshot(page):
    """A photograph of the page's top in chromium: its size, how many colours it has, and
    the share of its pixels that are coloured (not grey: the charts')."""
    shot_dir = tempfile.mkdtemp(prefix="fscope-shot-")
    try:
        shot = os.path.join(shot_dir, "report.png")
        chromium(page, f"--screenshot={shot}", "--window-size=1280,2000",
                 "--hide-scrollbars")
        check(os.path.exists(shot), "chromium wrote no screenshot")
        width, height, pixels = read_png(shot)
    finally:
        shutil.rmtree(shot_dir, ignore_errors=True)
    coloured = sum(1 for p in pixels if max(p) - min(p) > 40)
    return width, height, len(set(pixels)), coloured / len(pixels)


def looks_drawn(shot):
    """A screenshot of a drawn page: many colours and some coloured pixels. A blank page has
    one colour; the page with its data broken, text alone, about 120 greys and no coloured
    pixel; a drawn one (a gpu-bound run of 300 frames) about 1,500 colours, 1.3% of it
    coloured."""
    return shot[2] > 256 and shot[3] > 0.002


def test_html(build, demo):
    if not shutil.which("chromium"):
        print("chromium not installed")
        sys.exit(SKIP)
    r, summary, rows = rich_run(build, demo)
    page = os.path.join(r.capture_dir, "report.html")
    html, data = page_data(page)
    # Self-contained: nothing to load, no address but the SVG namespace.
    check(not re.search(r"\b(src|href)\s*=", html), "report.html loads or links something")
    addresses = set(re.findall(r"[a-z]+://[^\s'\"<>]*", html))
    check(addresses <= {"http://www.w3.org/2000/svg"}, f"report.html names {addresses}")
    check(data["frames"] == summary["frames"] and data["verdict"] == summary["verdict"]["run"]
          and data["reason"] == summary["verdict"]["reason"], "embedded data != summary.json")
    check(sum(data["columns"]["frames_per_column"]) == len(rows), "columns do not hold every frame")
    shown = sum(1 for row in rows if row["present"] == "presented")
    check(len(data["presented_intervals_ms"]) == shown - 1, "presented intervals != shown - 1")
    check(data["zones_csv"] == open(os.path.join(r.capture_dir, "zones.csv")).read(),
          "embedded zones != zones.csv")

    dom = dump_dom(page)
    body = body_attributes(dom)
    check(body.get("data-rendered") == "yes" and "data-error" not in body,
          f"report.html did not render: body {body}, status {status_text(dom)!r}")
    check(status_text(dom) == "rendered", f"status {status_text(dom)!r}")
    # Three charts, then the gauges (issue 20): each against its ceiling, drawn where the run
    # has its data (frame rate, CPU and RSS always do here).
    gauges = re.findall(r'<div[^>]*class="gauge"[^>]*>', dom)
    drawn = [g for g in gauges if 'data-state="drawn"' in g]
    check(dom.count("<svg") == 3 + len(drawn), f"{dom.count('<svg')} charts drawn, "
          f"{3 + len(drawn)} expected")
    for gauge_id in ("gauge-fps", "gauge-cpu", "gauge-rss"):
        tag = [g for g in drawn if f'id="{gauge_id}"' in g]
        ceiling = re.search(r'data-ceiling="([\d.e+]+)"', tag[0]) if tag else None
        check(ceiling and float(ceiling.group(1)) > 0, f"{gauge_id} not drawn against a "
              f"ceiling: {gauges}")
    # The frame rate and RSS on their own axes, as the data states them (issue 33).
    for gauge_id, axis in (("gauge-fps", data["gauges"]["frames"]["axis"]),
                           ("gauge-rss", data["gauges"]["rss"]["axis"])):
        tag = next(g for g in drawn if f'id="{gauge_id}"' in g)
        drawn_axis = [float(re.search(rf'data-{k}="([^"]+)"', tag).group(1))
                      for k in ("floor", "ceiling")]
        check(drawn_axis == [axis["min"], axis["max"]], f"{gauge_id} drawn over {drawn_axis}, "
              f"its axis is {axis}")
    # One time axis: every chart over the run's time shares one range in seconds.
    svgs = re.findall(r"<svg[^>]*>", dom)
    timed = [s for s in svgs if 'data-x-label="time since the first frame (s)"' in s]
    check(len(timed) == 2 + len(drawn), f"{len(timed)} charts over time, {2 + len(drawn)} "
          f"expected: {svgs}")
    ranges = {re.search(r'data-x-min="([^"]+)" data-x-max="([^"]+)"', s).groups()
              for s in timed}
    check(len(ranges) == 1, f"the charts over time have different ranges: {ranges}")
    # GPU busy in "where each frame went".
    budget = re.search(r'<svg[^>]*data-chart="budget"[^>]*>(.*?)</svg>', dom, re.S)
    check(budget and 'data-series="gpu_busy"' in budget.group(1),
          "no GPU busy line in 'where each frame went'")
    # Hitches: one row per group, in the data's order, each folding its hitches.
    rows_drawn = re.findall(r'<tr class="hitch-group" data-cause="([^"]+)" '
                            r'data-count="(\d+)">', dom)
    check(rows_drawn == [(g["cause"], str(g["count"])) for g in data["hitch_groups"]],
          f"hitch rows {rows_drawn}, groups {data['hitch_groups']}")
    check(dom.count("<details>") == sum(1 for g in data["hitch_groups"] if g["count"] > 1),
          "not every group of several hitches folds them")
    shot = screenshot(page)
    check(shot[:2] == (1280, 2000), f"screenshot {shot[0]}x{shot[1]}, not 1280x2000")
    check(looks_drawn(shot),
          f"the screenshot looks blank: {shot[2]} colours, {shot[3]:.2%} coloured")
    check(f"{summary['verdict']['run']}-bound" in dom, "the verdict is not on the page")
    check("vkQueuePresentKHR" in dom, "the zone table is not on the page")
    # Issue 19: threads that share a name are told apart by their id.
    with open(os.path.join(r.capture_dir, "zones.csv")) as f:
        zone_rows = list(csv.DictReader(f))
    for z in zone_rows:
        cell = f"{z['thread']} (tid {z['thread_id']})"
        check(cell in dom, f"zone table row without its thread id: {cell!r}")

    # The negative control: the same page with its data broken must say so, or the check
    # above proves nothing.
    broken_dir = tempfile.mkdtemp(prefix="fscope-report-")
    try:
        broken = os.path.join(broken_dir, "report.html")
        with open(broken, "w") as f:
            f.write(html.replace('{"app": ', '{"app": ,', 1))
        dom = dump_dom(broken)
        broken_shot = screenshot(broken)
    finally:
        shutil.rmtree(broken_dir, ignore_errors=True)
    body = body_attributes(dom)
    check(body.get("data-error") == "yes" and "data-rendered" not in body,
          f"a broken report was not caught: body {body}")
    check((status_text(dom) or "").startswith("error: "), f"status {status_text(dom)!r}")
    check(not looks_drawn(broken_shot), f"the broken page's screenshot passes for drawn: "
          f"{broken_shot[2]} colours, {broken_shot[3]:.2%} coloured")
    print(f"report.html rendered in chromium ({len(rows)} frames; the screenshot has "
          f"{shot[2]} colours, {shot[3]:.1%} of it coloured, the broken copy's "
          f"{broken_shot[2]} and {broken_shot[3]:.1%}); the broken copy says "
          f"{status_text(dom)!r}")



# --- trace.perfetto-trace -------------------------------------------------------------------

PERFETTO_PROTO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "perfetto",
                              "perfetto_subset.proto")


def read_varint(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7f) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def perfetto_packets(raw):
    """The Trace's packets with compressed_packets (field 50) inflated in place, as one Trace's
    bytes again: protoc decodes messages, not zlib."""
    out, at = bytearray(), 0
    while at < len(raw):
        start = at
        tag, at = read_varint(raw, at)
        check(tag == (1 << 3 | 2), f"a Trace field other than packet at byte {start}: tag {tag}")
        length, at = read_varint(raw, at)
        packet, at = raw[at:at + length], at + length
        check(len(packet) == length, "the trace ends inside a packet")
        inner, compressed = 0, None
        while inner < len(packet):
            field, inner = read_varint(packet, inner)
            if field & 7 == 2:
                n, inner = read_varint(packet, inner)
                if field >> 3 == 50:
                    compressed = packet[inner:inner + n]
                inner += n
            elif field & 7 == 0:
                _, inner = read_varint(packet, inner)
            elif field & 7 == 1:
                inner += 8
            else:
                check(False, f"wire type {field & 7} in a packet")
        if compressed is not None:
            check(length < 512 * 1024, f"a compressed batch of {length} bytes (Perfetto: < 512 KB)")
            out += zlib.decompress(compressed)
        else:
            out += raw[start:at]
    return bytes(out)


def parse_text_format(text):
    """protoc's text output as nested dicts of lists: {"packet": [{"timestamp": ["1"], ...}]}."""
    root = {}
    stack = [root]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
        elif line.endswith("{"):
            child = {}
            stack[-1].setdefault(line[:-1].strip(), []).append(child)
            stack.append(child)
        else:
            key, _, value = line.partition(": ")
            if value.startswith('"'):
                value = value[1:-1].encode().decode("unicode_escape").encode("latin-1").decode()
            stack[-1].setdefault(key, []).append(value)
    return root


def one(message, key, default=None):
    values = message.get(key)
    return values[0] if values else default


def decode_perfetto(path):
    if not shutil.which("protoc"):
        print("protoc not installed (Debian: protobuf-compiler)")
        sys.exit(SKIP)
    with open(path, "rb") as f:
        raw = f.read()
    trace = perfetto_packets(raw)
    r = subprocess.run(["protoc", f"--proto_path={os.path.dirname(PERFETTO_PROTO)}",
                        "--decode=framescope.perfetto.Trace", PERFETTO_PROTO],
                       input=trace, capture_output=True, timeout=300)
    check(r.returncode == 0, f"protoc --decode failed: {r.stderr.decode()[-2000:]}")
    return len(raw), parse_text_format(r.stdout.decode())["packet"]


class PerfettoTrace:
    """Tracks by uuid, events in file order with their names resolved."""

    def __init__(self, packets):
        self.tracks, self.events, names = {}, [], {}
        check(one(packets[0], "sequence_flags") == "1",
              "the first packet does not clear the sequence's incremental state")
        for p in packets:
            check(one(p, "trusted_packet_sequence_id") == "1", f"a packet off the sequence: {p}")
            for interned in p.get("interned_data", []):
                for entry in interned.get("event_names", []):
                    iid = one(entry, "iid")
                    check(iid not in names, f"event name iid {iid} interned twice")
                    names[iid] = one(entry, "name")
            for d in p.get("track_descriptor", []):
                self.tracks[int(one(d, "uuid"))] = d
            for e in p.get("track_event", []):
                check(one(p, "sequence_flags") == "2", "an event without SEQ_NEEDS_INCREMENTAL_STATE")
                iid = one(e, "name_iid")
                check(iid is None or iid in names, f"name iid {iid} used before it was interned")
                self.events.append({
                    "ts_us": int(one(p, "timestamp")) / 1000.0,
                    "type": one(e, "type"),
                    "track": int(one(e, "track_uuid")),
                    "name": names.get(iid),
                    "value": float(one(e, "double_counter_value",
                                       one(e, "counter_value", "nan"))),
                    "flows": [int(v) for v in e.get("flow_ids", [])],
                    "flows_ending": [int(v) for v in e.get("terminating_flow_ids", [])],
                })
        for e in self.events:
            check(e["track"] in self.tracks, f"an event on a track never described: {e}")

    def name(self, uuid):
        d = self.tracks[uuid]
        thread = one(d, "thread")
        return one(thread, "thread_name") if thread else one(d, "name")

    def thread_tid(self, uuid):
        thread = one(self.tracks[uuid], "thread")
        return int(one(thread, "tid")) if thread else None

    def in_ns(self, uuid):
        counter = one(self.tracks[uuid], "counter")
        return counter is not None and one(counter, "unit") == "UNIT_TIME_NS"

    def parent(self, uuid):
        p = one(self.tracks[uuid], "parent_uuid")
        return int(p) if p else None


def check_perfetto_against_json(trace, perfetto, summary):
    """Every event of trace.json is in the Perfetto trace: same name, same time within 1 us,
    on the track of the same thread (or queue, or device); begins and ends balance on every
    track; each queue has its track; flows link submissions to GPU spans; a frame instant per
    frame. Returns what it counted."""
    thread_names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"}
    by_tid = {perfetto.thread_tid(u): u for u in perfetto.tracks if perfetto.thread_tid(u)}
    by_name = collections.defaultdict(set)
    for u in perfetto.tracks:
        by_name[perfetto.name(u)].add(u)

    def tracks_of(tid, ph):
        if tid >= 2000000:  # gpu zones of device tid - 2000000, over its lanes
            base = f"gpu zones (device {tid - 2000000})"
            return {u for u in perfetto.tracks if (perfetto.name(u) or "").startswith(base)}
        if tid >= 1000000:  # a GPU queue's track: not a thread
            found = by_name.get(thread_names.get(tid), set())
            check(found and all(perfetto.thread_tid(u) is None for u in found),
                  f"no track for GPU queue {thread_names.get(tid)!r} (tid {tid})")
            return found
        check(tid in by_tid, f"no thread track for tid {tid}")
        if ph == "X":  # command buffer calls: the thread's "command buffers" tracks
            return {u for u in perfetto.tracks if perfetto.parent(u) == by_tid[tid] and
                    (perfetto.name(u) or "").startswith("command buffers")}
        return {by_tid[tid]}

    # (type, track, name) -> sorted times; matched entries removed.
    index = collections.defaultdict(list)
    for e in perfetto.events:
        index[(e["type"], e["track"], e["name"])].append(e["ts_us"])
    for times in index.values():
        times.sort()

    def take(kind, tracks, name, ts_us, what):
        for track in sorted(tracks):
            times = index.get((kind, track, name), [])
            i = bisect.bisect_left(times, ts_us - 1.0)
            if i < len(times) and abs(times[i] - ts_us) <= 1.0:
                del times[i]
                return track
        check(False, f"trace.json's {what} has no {kind} in the Perfetto trace")

    counted = collections.Counter()
    open_on = collections.defaultdict(list)  # JSON tid -> tracks of its open B events
    counters = collections.defaultdict(list)
    for e in perfetto.events:
        if e["type"] == "TYPE_COUNTER":
            counters[perfetto.name(e["track"])].append((e["ts_us"], e["value"]))
    for e in trace["traceEvents"]:
        ph, tid = e["ph"], e.get("tid", 0)
        what = f"{ph} {e.get('name')!r} at {e.get('ts')} us (tid {tid})"
        if ph == "B":
            open_on[tid].append(take("TYPE_SLICE_BEGIN", tracks_of(tid, ph), e["name"], e["ts"], what))
        elif ph == "E":
            check(open_on[tid], f"trace.json's {what} closes nothing")
            take("TYPE_SLICE_END", {open_on[tid].pop()}, None, e["ts"], what)
        elif ph == "X":
            track = take("TYPE_SLICE_BEGIN", tracks_of(tid, ph), e["name"], e["ts"], what)
            take("TYPE_SLICE_END", {track}, None, e["ts"] + e["dur"], what + "'s end")
        elif ph == "i":
            take("TYPE_INSTANT", tracks_of(tid, ph), e["name"], e["ts"], what)
        elif ph == "C":
            args = e["args"]
            for key, value in args.items():
                name = e["name"] if len(args) == 1 else f"{e['name']} {key}"
                # A duration in ms is a track in nanoseconds, named without " ms".
                in_ns = name.replace(" ms", "", 1)
                if " ms" in name and in_ns in counters:
                    check(all(perfetto.in_ns(u) for u in by_name[in_ns]),
                          f"counter track {in_ns!r} is not in nanoseconds")
                    name, value, tolerance = in_ns, value * 1e6, 1.5
                else:
                    tolerance = 1e-6 * max(1.0, abs(value))
                samples = counters.get(name, [])
                match = [v for t, v in samples if abs(t - e["ts"]) <= 1.0 and
                         abs(v - value) <= tolerance]
                check(match, f"trace.json's {what} {key}={value} has no sample on counter "
                      f"track {name!r}")
        else:
            check(ph == "M", f"an event of phase {ph} in trace.json")
            continue
        counted[ph] += 1

    # Begins and ends balance on every track, in time order (file order among equal times).
    depth = collections.Counter()
    order = sorted(range(len(perfetto.events)), key=lambda i: perfetto.events[i]["ts_us"])
    for i in order:
        e = perfetto.events[i]
        if e["type"] == "TYPE_SLICE_BEGIN":
            depth[e["track"]] += 1
        elif e["type"] == "TYPE_SLICE_END":
            depth[e["track"]] -= 1
            check(depth[e["track"]] >= 0, f"an end with nothing open on track "
                  f"{perfetto.name(e['track'])!r} at {e['ts_us']} us")
    check(not any(depth.values()), f"slices left open: {dict(depth)}")

    # Flows: each id leaves one vkQueueSubmit (on a thread) and ends on one GPU span (on a
    # queue's track), no earlier than it left.
    starts = {f: e for e in perfetto.events for f in e["flows"]}
    ends = {f: e for e in perfetto.events for f in e["flows_ending"]}
    check(set(starts) == set(ends), "flows that start or end nowhere")
    for f, start in starts.items():
        end = ends[f]
        check(start["name"].startswith("vkQueueSubmit") and
              perfetto.thread_tid(start["track"]) is not None, f"flow {f} leaves {start}")
        check(end["name"] == "submission" and perfetto.thread_tid(end["track"]) is None,
              f"flow {f} ends on {end}")
        check(start["ts_us"] <= end["ts_us"], f"flow {f} ends before it starts")
    spans = [e for e in perfetto.events if e["type"] == "TYPE_SLICE_BEGIN" and
             e["name"] == "submission"]
    check(spans, "no GPU spans")

    # A frame instant per frame of the run.
    frames_tracks = by_name.get("frames", set())
    check(len(frames_tracks) == 1, "no frames track")
    frames = [e for e in perfetto.events if e["track"] in frames_tracks]
    check(len(frames) == summary["frames"] and all(e["name"] == "frame" for e in frames),
          f"{len(frames)} frame instants for {summary['frames']} frames")
    counted["flows"], counted["spans"], counted["frames"] = len(starts), len(spans), len(frames)
    return counted


def test_perfetto(build, demo):
    """trace.perfetto-trace against trace.json, on a run with everything the traces hold:
    the layer's waits, GPU spans on a queue (every submission timed: run_app's default), GPU
    zones in labelled passes, command buffer recordings, counters, a hitch."""
    frames = 200
    r, summary, rows = demo_run(build, demo, "mailbox", frames,
                                ["--passes", "shadow:200,main:400", "--cpu-spike", "120:60"])
    line = r.summary_line("capture") or ""
    check("trace.perfetto-trace" in line, f"the capture line does not list it: {line}")
    size, packets = decode_perfetto(os.path.join(r.capture_dir, "trace.perfetto-trace"))
    perfetto = PerfettoTrace(packets)
    trace = r.trace()
    check("window" not in trace["otherData"], "a short run's trace.json says it was cut")
    counted = check_perfetto_against_json(trace, perfetto, summary)
    check(counted["X"] and counted["i"] and counted["C"] and counted["B"],
          f"the run lacks a kind of event: {dict(counted)}")
    check(any(e["name"] and e["name"].startswith("hitch") for e in perfetto.events),
          "no hitch")
    # Every submission was timed on one queue: every GPU span has its flow.
    check(counted["flows"] == counted["spans"],
          f"{counted['flows']} flows for {counted['spans']} GPU spans")
    print(f"every event of trace.json in trace.perfetto-trace: {dict(counted)}; "
          f"{size} bytes, {size / frames:.0f} B a frame")


def test_trace_window(build, demo):
    """FRAMESCOPE_TRACE_WINDOW=1: trace.json holds the last second and says so; the Perfetto
    trace holds the whole run."""
    frames = 180  # FIFO on the headless Weston's 60 Hz: 3 s
    with Weston() as w:
        r = run_app([demo, "--quiet", "--frames", str(frames)], w, build,
                    extra_env={"FRAMESCOPE_TRACE_WINDOW": "1"})
    check(r.rc == 0, f"demo exited {r.rc}: {r.stderr[-2000:]}")
    summary, _, trace, _ = check_capture_consistent(r, expected_frames=frames)
    window = trace["otherData"].get("window", "")
    m = re.match(r"the last 1 s of the run only: events before ([0-9.]+) us left out; "
                 r"trace.perfetto-trace holds them all$", window)
    check(m, f"trace.json does not say it holds the last second: {window!r}")
    cut = float(m.group(1))
    line = r.summary_line("capture") or ""
    check("trace.json (the last 1 s of the run; trace.perfetto-trace has all of it)" in line,
          f"the full summary's capture line does not say trace.json was cut: {line}")
    timed = [e for e in trace["traceEvents"] if "ts" in e]
    check(all(e["ts"] >= cut - 1e-3 for e in timed if e["ph"] != "E"),
          "trace.json holds events from before its window")
    last = max(e["ts"] + e.get("dur", 0) for e in timed)
    check(abs(last - cut - 1e6) < 1e3, f"the window is {last - cut:.0f} us, not 1 s")
    presents = sum(1 for e in timed if e["ph"] == "i" and e["name"] == "present")
    check(presents < frames * 2 // 3, f"{presents} present marks in the last second of {frames}")
    _, packets = decode_perfetto(os.path.join(r.capture_dir, "trace.perfetto-trace"))
    perfetto = PerfettoTrace(packets)
    frame_marks = [e for e in perfetto.events if e["name"] == "frame"]
    check(len(frame_marks) == summary["frames"] == frames,
          f"the Perfetto trace has {len(frame_marks)} frames of {frames}")
    # The same run's trace.json with no window: every event, as the Perfetto trace has them.
    env = dict(os.environ, FRAMESCOPE_TRACE_WINDOW="all")
    full = subprocess.run([os.path.join(build, "tools", "framescope"), "report", "--format",
                           "trace", r.capture_dir], env=env, capture_output=True, timeout=120)
    check(full.returncode == 0, f"framescope report: {full.stderr.decode()[-1000:]}")
    whole = json.loads(full.stdout)
    check("window" not in whole["otherData"], "FRAMESCOPE_TRACE_WINDOW=all cut the trace")
    counted = check_perfetto_against_json(whole, perfetto, summary)
    print(f"trace.json: the last second ({presents} present marks), the window said; "
          f"the whole run in trace.perfetto-trace: {dict(counted)}")


# Every file of a capture `framescope report` recomputes, by --format.
CAPTURE_FORMATS = {"json": "summary.json", "csv": "frames.csv", "seconds": "seconds.csv",
                   "zones": "zones.csv", "trace": "trace.json", "threads": "threads.csv",
                   "presentmon": "presentmon.csv", "mangohud": "mangohud.csv",
                   "html": "report.html"}


def framescope_report(build, directory, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRAMESCOPE")}
    return subprocess.run([os.path.join(build, "tools", "framescope"), "report"] + list(args) +
                          [directory], env=env, capture_output=True, timeout=120)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_keep_window(build, demo):
    """FRAMESCOPE_KEEP_MINUTES=0.02 on a FIFO run of 300 frames (about 8 s) with a CPU spike at
    frame 100: frames.csv, presentmon.csv and mangohud.csv hold exactly the frames that ended in
    the last 1.2 s and the 60 either side of each hitch, with the run's frame index; summary.json
    and the full summary say so, over the whole run; seconds.csv covers every second and adds up
    to summary.json; `framescope report` reproduces every file from the capture alone."""
    frames, spike, keep_s, around = 300, 100, 1.2, 60
    with Weston() as w:
        r = run_app([demo, "--quiet", "--frames", str(frames), "--cpu-spike", f"{spike}:80"],
                    w, build, extra_env={"FRAMESCOPE_KEEP_MINUTES": "0.02"})
    check(r.rc == 0, f"demo exited {r.rc}: {r.stderr[-2000:]}")
    summary = r.json()
    check(summary["frames"] == frames, f"summary.json: {summary['frames']} frames of {frames}")
    # The whole run's rows, as the same recording gives them with every frame kept.
    whole = framescope_report(build, r.capture_dir, "--keep-minutes", "all", "--format", "csv")
    check(whole.returncode == 0, f"report --keep-minutes all: {whole.stderr.decode()[-800:]}")
    all_rows = list(csv.DictReader(whole.stdout.decode().splitlines()))
    check(len(all_rows) == frames, f"--keep-minutes all: {len(all_rows)} rows of {frames}")
    end = {int(row["frame"]): ns(row["start_ms"]) + ns(row["frame_ms"]) for row in all_rows}
    cut = max(end.values()) - int(keep_s * 1e9)
    hitches = [h["frame"] for h in summary["hitches"]["all"] if h["surface"] == 0]
    check(any(abs(h - spike) <= 1 for h in hitches), f"no hitch at the spike: {hitches}")
    around_hitches = {i for h in hitches for i in range(max(0, h - around),
                                                       min(frames, h + around + 1))}
    # A frame that ended within 2 us of the cut may fall either side (ticks against ms).
    unsure = {i for i, e in end.items() if abs(e - cut) <= 2000}
    expected = {i for i, e in end.items() if e >= cut} | around_hitches
    rows = read_csv(os.path.join(r.capture_dir, "frames.csv"))
    kept = [int(row["frame"]) for row in rows]
    check(kept == sorted(set(kept)), "frames.csv's frames are not in order, once each")
    check(set(kept) ^ expected <= unsure,
          f"frames.csv keeps {sorted(set(kept) - expected)} beyond and misses "
          f"{sorted(expected - set(kept))} of the window and the frames around hitches")
    check(all(h in kept for h in hitches) and 0 < len(kept) < frames,
          f"frames.csv: {len(kept)} rows, hitches {hitches}")
    check(all(row == all_rows[int(row["frame"])] for row in rows),
          "a kept row differs from the same frame's row with every frame kept")
    k = summary.get("kept")
    check(k and k["frames"] == len(kept) and k["of"] == frames and
          k["window_minutes"] == 0.02 and k["frames_each_side"] == around and
          k["hitches"] == k["hitches_total"] == summary["hitches"]["count"] and
          k["in_window"] + k["around_hitches"] == len(kept) and
          "frames.csv" in k["files"], f"summary.json's kept: {k}")
    line = r.summary_line("kept") or ""
    check(line.startswith(f"rows of {len(kept)} of {frames} frames") and "0.02 min" in line,
          f"the full summary's kept line: {line!r}")
    # The other per-frame files keep the same frames, in the same order.
    presentmon = read_csv(os.path.join(r.capture_dir, "presentmon.csv"))
    check([seconds_ns(p["CPUStartTime"]) for p in presentmon] ==
          [ns(row["start_ms"]) for row in rows], "presentmon.csv keeps other frames")
    mangohud = read_lines(r, "mangohud.csv")[3:-1]
    check(len(mangohud) == len(kept), f"mangohud.csv: {len(mangohud)} rows, {len(kept)} kept")
    # threads.csv: the samples that overlap the time of the frames kept (within 2 us).
    spans = [(cut, max(end.values()))] + [
        (ns(all_rows[max(0, h - around)]["start_ms"]), end[min(frames - 1, h + around)])
        for h in hitches]
    threads = read_csv(os.path.join(r.capture_dir, "threads.csv"))
    whole_threads = framescope_report(build, r.capture_dir, "--keep-minutes", "all",
                                      "--format", "threads").stdout.decode().count("\n") - 1
    check(0 < len(threads) < whole_threads and
          all(any(ns(t["start_ms"]) <= b + 2000 and ns(t["end_ms"]) >= a - 2000
                  for a, b in spans) for t in threads),
          f"threads.csv keeps {len(threads)} of {whole_threads} samples, not those of the kept "
          f"frames' time")
    # seconds.csv: every second of the whole run, adding up to summary.json.
    seconds = read_csv(os.path.join(r.capture_dir, "seconds.csv"))
    starts = [int(s["start_s"]) for s in seconds]
    check(starts == sorted(set(starts)) and len(seconds) >= 6, f"seconds.csv rows: {starts}")
    check(sum(int(s["frames"]) for s in seconds) == summary["frames"],
          "seconds.csv's frames do not sum to summary.json's")
    check(sum(int(s["hitches"]) for s in seconds) == summary["hitches"]["count"],
          "seconds.csv's hitches do not sum to summary.json's")
    presented = sum(s["presented"] for s in summary["surfaces"])
    check(sum(int(s["shown"]) for s in seconds) == presented,
          f"seconds.csv's shown do not sum to the {presented} presented")
    per_second = collections.Counter(ns(row["start_ms"]) // 1000000000 for row in all_rows)
    check({int(s["start_s"]): int(s["frames"]) for s in seconds} == dict(per_second),
          "seconds.csv counts other frames in its seconds than frames.csv starts there")
    spike_second = ns(all_rows[spike]["start_ms"]) // 1000000000
    row = next(s for s in seconds if int(s["start_s"]) == spike_second)
    check(int(row["hitches"]) >= 1 and ns(row["frame_max_ms"]) >= 80000000,
          f"the spike's second: {row}")
    # The capture says its window (keep.json); report reads it back and reproduces every file.
    with open(os.path.join(r.capture_dir, "keep.json")) as f:
        check(json.load(f) == {"keep_ms": 1200}, "keep.json does not hold the window")
    for fmt, name in CAPTURE_FORMATS.items():
        out = framescope_report(build, r.capture_dir, "--format", fmt)
        check(out.returncode == 0, f"report --format {fmt}: {out.stderr.decode()[-800:]}")
        with open(os.path.join(r.capture_dir, name), "rb") as f:
            check(out.stdout == f.read(), f"report --format {fmt} differs from {name}")
    # Bad values: one line naming the option, exit 2.
    exe = os.path.join(build, "tools", "framescope")
    for args in (["report", "--keep-minutes", "0", r.capture_dir],
                 ["run", "--keep-minutes", "10m", "--", "true"]):
        bad = subprocess.run([exe] + args, capture_output=True, text=True, timeout=60)
        check(bad.returncode == 2 and "--keep-minutes takes minutes from 0.001 to 10080 or all"
              in bad.stderr, f"{args}: {bad.returncode} {bad.stderr}")
    print(f"kept {len(kept)} of {frames} rows ({k['in_window']} in the last {keep_s} s, "
          f"{k['around_hitches']} more around hitches {hitches}); seconds.csv: {len(seconds)} "
          f"rows adding up; every file reproduced by report")


if __name__ == "__main__":
    main({"csv": test_csv, "html": test_html, "html-data": test_html_data,
          "perfetto": test_perfetto, "trace_window": test_trace_window,
          "keep_window": test_keep_window})
