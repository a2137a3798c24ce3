#!/usr/bin/env python3
"""The capture in other tools' formats, read back as their readers would: the demo under the
layer on a headless Weston, then presentmon.csv and mangohud.csv checked frame by frame against
frames.csv, and report.html opened in a real headless browser (Debian's chromium).

usage: test_formats.py TEST BUILD_DIR DEMO"""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import SKIP, Weston, check, check_capture_consistent, main, ns, run_app

PRESENTMON_COLUMNS = [
    "Application", "ProcessID", "SwapChainAddress", "PresentRuntime", "SyncInterval",
    "PresentFlags", "AllowsTearing", "PresentMode", "CPUStartTime", "FrameTime", "CPUBusy",
    "CPUWait", "GPULatency", "GPUTime", "GPUBusy", "GPUWait", "DisplayLatency", "DisplayedTime",
    "AnimationError",
]
MANGOHUD_SYSTEM = "os,cpu,gpu,ram,kernel,driver,cpuscheduler"
MANGOHUD_COLUMNS = ("fps,frametime,cpu_load,gpu_load,cpu_temp,gpu_temp,gpu_core_clock,"
                    "gpu_mem_clock,gpu_vram_used,gpu_power,ram_used,elapsed")


def demo_run(build, demo, mode, frames):
    with Weston() as w:
        r = run_app([demo, "--quiet", "--frames", str(frames), "--present-mode", mode], w, build)
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
        for column in ("cpu_load", "cpu_temp", "gpu_temp", "gpu_core_clock", "gpu_mem_clock",
                       "gpu_vram_used", "gpu_power", "ram_used"):
            check(s[column] == "0", f"frame {i}: {column} is not measured but says {s[column]}")


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


def dump_dom(page):
    """The page's DOM after its scripts ran, as Debian's chromium renders it headless."""
    profile = tempfile.mkdtemp(prefix="fscope-chromium-")
    try:
        proc = subprocess.run(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", f"--user-data-dir={profile}", "--dump-dom", "file://" + page],
            capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    check(proc.returncode == 0, f"chromium exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stdout


def body_attributes(dom):
    m = re.search(r"<body([^>]*)>", dom)
    check(m, f"no body in the DOM: {dom[:500]}")
    return dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))


def status_text(dom):
    m = re.search(r'<p id="status">([^<]*)</p>', dom)
    return m.group(1) if m else None


def test_html(build, demo):
    if not shutil.which("chromium"):
        print("chromium not installed")
        sys.exit(SKIP)
    r, summary, rows = demo_run(build, demo, "fifo", 60)
    page = os.path.join(r.capture_dir, "report.html")
    html = open(page).read()
    # Self-contained: nothing to load, no address but the SVG namespace.
    check(not re.search(r"\b(src|href)\s*=", html), "report.html loads or links something")
    addresses = set(re.findall(r"[a-z]+://[^\s'\"<>]*", html))
    check(addresses <= {"http://www.w3.org/2000/svg"}, f"report.html names {addresses}")
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    check(m, "no embedded data")
    data = json.loads(m.group(1))
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
    finally:
        shutil.rmtree(broken_dir, ignore_errors=True)
    body = body_attributes(dom)
    check(body.get("data-error") == "yes" and "data-rendered" not in body,
          f"a broken report was not caught: body {body}")
    check((status_text(dom) or "").startswith("error: "), f"status {status_text(dom)!r}")
    print(f"report.html rendered in chromium ({len(rows)} frames); the broken copy says "
          f"{status_text(dom)!r}")


if __name__ == "__main__":
    main({"csv": test_csv, "html": test_html})
