#!/usr/bin/env python3
"""The engine's own cost (issue 20): the demo records thousands of draws per frame under the
layer on a headless Weston, with its binds all redundant or none, on one thread or several,
as primaries or secondaries, and the capture must count exactly what the demo says it
issued: binds and redundant binds per frame and at their label, draws and their geometry,
recording time attributed to the thread and pool that did it (and no more than that thread's
CPU time), device memory that leaks rising frame by frame, descriptor sets against their
pool's capacity, the budget where the driver offers it, and the app's names throughout.

usage: test_engine_cost.py TEST BUILD_DIR DEMO"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vkharness import Weston, check, main, run_app

FRAMES = 24
KINDS = ["pipeline", "vertex_buffer", "index_buffer", "descriptor_set", "push_descriptor",
         "dynamic_state"]
DEMO_LINE = re.compile(
    r"draws (\d+) per frame on (\d+) threads \((primary|secondary)\), binds per frame: vertex "
    r"(\d+) index (\d+) sets (\d+) pipeline (\d+), redundant vertex (\d+) index (\d+) sets (\d+) "
    r"pipeline (\d+); recording ([\d.]+) ns per command")


def demo_run(build, demo, args, frames=FRAMES, layers="VK_LAYER_FRAMESCOPE", extra_env=None):
    with Weston() as w:
        r = run_app([demo, "--present-mode", "mailbox", "--frames", str(frames)] + args, w,
                    build, layers=layers, extra_env=extra_env)
    check(r.rc == 0, r.stderr[-3000:])
    return r, r.json()


def demo_said(r):
    """What the demo says it issued per frame."""
    m = DEMO_LINE.search(r.stdout)
    check(m, f"no draws line from the demo: {r.stdout[-1000:]}")
    g = [int(x) if x.isdigit() else x for x in m.groups()]
    return {"draws": g[0], "threads": g[1], "level": g[2],
            "binds": {"vertex_buffer": g[3], "index_buffer": g[4], "descriptor_set": g[5],
                      "pipeline": g[6]},
            "redundant": {"vertex_buffer": g[7], "index_buffer": g[8], "descriptor_set": g[9],
                          "pipeline": g[10]}}


def per_frame_rows(r):
    rows = r.frames()
    check(len(rows) >= FRAMES - 1, f"{len(rows)} frames in frames.csv")
    return rows


def check_binds_exact(r, s, said, frames):
    """Every frame's binds and redundant binds are the demo's, exactly; the label 'cubes'
    holds them all (the draws are recorded inside it)."""
    rows = per_frame_rows(r)
    for row in rows:
        for kind in ("vertex_buffer", "index_buffer", "descriptor_set"):
            check(int(row[f"binds_{kind}"]) == said["binds"][kind] and
                  int(row[f"redundant_{kind}"]) == said["redundant"][kind],
                  f"frame {row['frame']}: {kind} binds {row[f'binds_{kind}']} redundant "
                  f"{row[f'redundant_{kind}']}, the demo issued {said['binds'][kind]} and "
                  f"{said['redundant'][kind]}")
    sites = [x for x in s["engine"]["sites"] if x["kind"] == "label" and x["name"] == "cubes"]
    check(len(sites) == 1, f"no single site for label 'cubes': {s['engine']['sites']}")
    site = sites[0]
    for kind in ("vertex_buffer", "index_buffer", "descriptor_set"):
        binds, redundant = site["binds"][kind]
        check(binds == said["binds"][kind] * frames and
              redundant == said["redundant"][kind] * frames,
              f"label 'cubes' {kind}: {binds} binds, {redundant} redundant over {frames} "
              f"frames; the demo issued {said['binds'][kind]} and {said['redundant'][kind]} a "
              "frame")
    return site


def test_redundant(build, demo):
    """10,000 draws a frame, every bind the same as the one before: all but the first of each
    kind in each command buffer are redundant, counted exactly per frame and at the label;
    the draws' geometry is counted from their parameters."""
    r, s = demo_run(build, demo, ["--draws", "10000", "--redundant-binds"])
    said = demo_said(r)
    check(said["draws"] == 10000 and said["redundant"]["vertex_buffer"] > 9000, said)
    check(s["frames"] == FRAMES, f"{s['frames']} frames")
    check_binds_exact(r, s, said, s["frames"])
    rows = per_frame_rows(r)
    for row in rows:
        # The demo's own frame draws one triangle (3 vertices) beside the 10,000 indexed
        # draws of 3 indices.
        check(int(row["draws"]) == 10001 and int(row["indices"]) == 30000 and
              int(row["vertices"]) == 3 and int(row["instances"]) == 10001 and
              int(row["indirect_draws"]) == 0,
              f"frame {row['frame']}: draws {row['draws']} indices {row['indices']} vertices "
              f"{row['vertices']} instances {row['instances']}")
    # The app's names: its queue names its GPU track, its render passes their GPU zones, its
    # command buffer the recording intervals on the recording thread's track.
    trace = r.trace()
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    tracks = [e["args"]["name"] for e in events
              if e.get("ph") == "M" and e.get("name") == "thread_name"]
    check("gpu demo queue" in tracks, f"no GPU track named by the queue's name: {tracks}")
    zones = [z["path"] for z in s["gpu_zones"]["zones"]]
    check(any(z.startswith("pass 'frame pass' ") for z in zones) and
          any(z.startswith("pass 'cubes pass' ") for z in zones), zones)
    records = [e for e in events if e.get("ph") == "X" and e.get("name") == "record record cb 0"]
    check(len(records) >= s["frames"], f"{len(records)} recordings of 'record cb 0' on a track")
    text = r.stderr
    check(re.search(r"redundant   at label 'cubes':.* [\d.]+ of 10000.0 vertex-buffer", text),
          text[-3000:])
    print(f"redundant: {said['redundant']['vertex_buffer']} of 10000 vertex-buffer binds a "
          f"frame, exact in all {len(rows)} frames and at label 'cubes'")


def test_unique(build, demo):
    """The same 10,000 draws alternating between two of each: not one bind is redundant."""
    r, s = demo_run(build, demo, ["--draws", "10000"])
    said = demo_said(r)
    check(all(v == 0 for v in said["redundant"].values()), said)
    check_binds_exact(r, s, said, s["frames"])
    per = s["engine"]["binds_per_frame"]
    check(per["vertex_buffer"]["redundant"] == 0 and per["descriptor_set"]["redundant"] == 0,
          per)
    print(f"unique: {per['vertex_buffer']['binds']:.0f} vertex-buffer binds a frame, 0 redundant")


def test_wide(build, demo):
    """Binds of several vertex buffers and several descriptor sets in one call, one set with a
    dynamic uniform buffer (--wide-binds), from 2 threads: the same two sets in every draw
    with the dynamic offset alternating are never redundant (the offset is compared), and
    with every bind repeated all but each command buffer's first are; exact in every frame
    and at the label."""
    for mode, extra in (("offsets alternating", []), ("all repeated", ["--redundant-binds"])):
        r, s = demo_run(build, demo, ["--draws", "2000", "--record-threads", "2",
                                      "--wide-binds"] + extra)
        said = demo_said(r)
        expect = 0 if not extra else 2000 - 2  # one first bind per command buffer
        check(said["redundant"]["descriptor_set"] == expect and
              said["redundant"]["vertex_buffer"] == expect, said)
        check_binds_exact(r, s, said, s["frames"])
        print(f"wide, {mode}: {said['redundant']['descriptor_set']} of "
              f"{said['binds']['descriptor_set']} two-set binds redundant a frame, exact")


def test_secondary_pools(build, demo):
    """Secondary command buffers recorded on three threads, each from its own pools, reset
    once a frame: recording time is attributed to each thread and its pools (the pools named
    by the app), the secondary share is the workers', and no thread recorded for longer than
    it was on a CPU."""
    r, s = demo_run(build, demo, ["--draws", "6000", "--record-threads", "3", "--secondary",
                                  "--redundant-binds"])
    said = demo_said(r)
    check(said["level"] == "secondary" and said["threads"] == 3, said)
    frames = s["frames"]
    check_binds_exact(r, s, said, frames)
    rec = s["engine"]["recording"]
    check(rec["secondary_recordings"] >= 3 * frames, rec)
    check(0 < rec["secondary_ms"] <= rec["record_ms"], rec)
    # Every worker pool is named, reset once for each recording made from it, and the
    # recordings from it are its thread's.
    named = [p for p in rec["pools"] if p["name"].startswith("record pool ")]
    check(len(named) >= 3, f"named pools: {[p['name'] for p in rec['pools']]}")
    per_thread = {}
    for p in named:
        check(p["resets"] >= p["recordings"] - 1 and p["resets"] <= p["recordings"] + 1,
              f"{p['name']}: {p['resets']} resets for {p['recordings']} recordings")
        check(p["record_ms"] > 0 and p["ops_ms"] > 0, p)
        t = p["name"].split()[-1]
        per_thread[t] = per_thread.get(t, 0) + p["recordings"]
    check(sorted(per_thread) == ["0", "1", "2"], per_thread)
    check(all(n >= frames for n in per_thread.values()), per_thread)
    cbs = [c for c in rec["command_buffers"] if c["name"].startswith("record cb ")]
    check(cbs and all(c["secondary"] for c in cbs), rec["command_buffers"][:8])
    # The numbers add up: recording time is wall time a thread spent recording, so it fits in
    # the time that thread was on a CPU or waiting for one (preempted mid-recording: on two
    # cores, four recording threads are), as the kernel counted it up to its last sample
    # (the recordings that ended by then: a worker exits between two of the sampler's ticks).
    workers = 0
    for t in rec["threads"]:
        if t["oncpu_ms"] is None:
            continue
        alive = t["oncpu_ms"] + t["runnable_ms"]
        check(0 < t["record_ms_sampled"] <= t["record_ms"] and
              t["record_ms_sampled"] <= alive + 0.001,
              f"{t['name']}: recorded {t['record_ms_sampled']:.3f} ms by its last sample, on a "
              f"CPU {t['oncpu_ms']:.3f} ms and runnable {t['runnable_ms']:.3f} ms")
        workers += t["secondary_recordings"] > 0
    check(workers >= 3, f"{workers} threads recorded secondaries: {rec['threads']}")
    for row in per_frame_rows(r)[1:]:
        check(float(row["record_busiest_thread_ms"]) <= float(row["frame_ms"]) + 0.001, row)
    check(re.search(r"recording   [\d.]+ ms per frame on 3 threads \(\d+% secondary\)",
                    r.stderr), r.summary_line("recording"))
    check("'record pool " in r.summary_line("pools"), r.summary_line("pools"))
    print(f"secondary: {rec['secondary_ms']:.1f} of {rec['record_ms']:.1f} ms recorded as "
          f"secondaries on {workers} threads; pools {sorted(p['name'] for p in named)}")


def test_memory(build, demo):
    """A leak of 256 KiB a frame, never freed (the app exits without destroying): live device
    memory rises by that much every frame and ends at least that high; each frame counts its
    allocation; the allocations are named in the largest list."""
    kib = 256
    r, s = demo_run(build, demo, ["--leak-kb", str(kib), "--no-destroy"])
    frames = s["frames"]
    mem = s["engine"]["memory"]
    check(mem["live_bytes"] >= frames * kib * 1024, mem)
    check(mem["peak_bytes"] >= mem["live_bytes"], mem)
    rows = per_frame_rows(r)
    leaking = [row for row in rows if int(row["memory_allocated_bytes"]) >= kib * 1024]
    check(len(leaking) >= frames - 1, f"{len(leaking)} of {frames} frames allocated {kib} KiB")
    check(any(x["name"].startswith("leak ") for x in mem["largest"]) or
          all(x["bytes"] > kib * 1024 for x in mem["largest"]), mem["largest"])
    heaps = [h for h in mem["heaps"] if h["allocations"]]
    check(heaps and sum(h["live_bytes"] for h in heaps) == mem["live_bytes"], heaps)
    # The trace's device-memory track rises frame after frame.
    trace = r.trace()
    points = [e["args"] for e in trace.get("traceEvents", trace)
              if isinstance(e, dict) and e.get("ph") == "C" and "device memory" in e.get("name", "")]
    if points:
        values = [list(p.values())[0] for p in points]
        check(values[-1] >= values[0] + (frames - 2) * kib / 1024, values[:4] + values[-4:])
    check(re.search(r"memory      device memory live [\d.]+ MiB at the end", r.stderr),
          r.summary_line("memory"))
    print(f"memory: live {mem['live_bytes'] / 2**20:.1f} MiB after {frames} frames leaking "
          f"{kib} KiB each; {len(points)} points on the trace's track")


def test_budget(build, demo):
    """VK_EXT_memory_budget, where the driver offers it, read with every tick of the sampler:
    usage within budget, and the summary says so; where it does not (lavapipe), the summary
    says it was not read and why."""
    r, s = demo_run(build, demo, ["--leak-kb", "1024"], frames=30)
    mem = s["engine"]["memory"]
    if mem["budget_supported"]:
        read = [h for h in mem["heaps"] if h["budget_read"]]
        check(read and all(h["budget"] > 0 and h["budget_samples"] > 0 for h in read), read)
        check(any(h["peak_usage"] > 0 for h in read), read)
        check("budget      device " in r.stderr, r.summary_line("budget"))
        print(f"budget: read on {len(read)} heaps")
    else:
        check("budget      not read: no device here offers VK_EXT_memory_budget" in r.stderr,
              r.summary_line("budget"))
        print("budget: this driver offers no VK_EXT_memory_budget, and the summary says so")


def test_descriptors(build, demo):
    """The draws' two descriptor sets from a pool of 16: the pool's peak is 2 of 16, and the
    gauges saw it."""
    # The gauges are the sampler thread's, read at its ticks: on a loaded machine a short run
    # can end before a tick saw the sets live (CI once: 30 frames, peak_sets 0). Longer runs
    # until one did; the pool's own counts are exact in every run.
    for frames in (30, 120, 480):
        r, s = demo_run(build, demo, ["--draws", "100"], frames=frames)
        d = s["engine"]["descriptors"]
        pools = [p for p in d["pools_list"] if p["max_sets"] == 16]
        check(len(pools) == 1 and pools[0]["peak"] == 2 and pools[0]["allocated"] == 2 and
              pools[0]["failures"] == 0, d["pools_list"])
        if d["peak_sets"] > 0:
            break
    check(d["peak_sets"] >= 2 and d["capacity_at_peak"] >= 16, d)
    check(s["engine"]["process"]["gauges"] > 0 and s["engine"]["process"]["rss_peak_bytes"] > 0,
          s["engine"]["process"])
    print(f"descriptors: peak {d['peak_sets']} of {d['capacity_at_peak']} sets; RSS peak "
          f"{s['engine']['process']['rss_peak_bytes'] / 2**20:.0f} MiB")


def test_pipeline_stats(build, demo):
    """FRAMESCOPE_PIPELINE_STATS=on: each timed pass gets the GPU's pipeline statistics. The
    draws' pass takes in exactly 3 vertices and 1 triangle a draw, the frame's own pass 3 and
    1; a pass that executes secondaries gets none and is counted as skipped; a bad value is
    said and leaves them off; the validation layer below stays silent."""
    draws = 500
    env = {"FRAMESCOPE_PIPELINE_STATS": "on"}
    r, s = demo_run(build, demo, ["--draws", str(draws)], frames=12, extra_env=env,
                    layers="VK_LAYER_FRAMESCOPE:VK_LAYER_KHRONOS_validation"
                    if os.path.exists("/usr/share/vulkan/explicit_layer.d/"
                                      "VkLayer_khronos_validation.json") else
                    "VK_LAYER_FRAMESCOPE")
    check(not r.validation_errors(), "\n".join(r.validation_errors()[:10]))
    st = s["gpu_zones"]["pipeline_stats"]
    if st["state"] == "unsupported":
        check("no device offers pipelineStatisticsQuery" in r.stderr, r.stderr[-2000:])
        print("pipeline statistics: not offered by this device, and said")
        sys.exit(77)
    check(st["state"] == "on", st)
    passes = {p["path"]: p for p in st["passes"]}
    cubes = [p for path, p in passes.items() if path.startswith("pass 'cubes pass' ")]
    frame = [p for path, p in passes.items() if path.startswith("pass 'frame pass' ")]
    check(len(cubes) == 1 and len(frame) == 1, list(passes))
    for p, vertices, triangles in ((cubes[0], 3 * draws, draws), (frame[0], 3, 1)):
        n = p["measured"]
        check(n > 0 and p["total"]["ia_vertices"] == vertices * n and
              p["total"]["ia_primitives"] == triangles * n and
              p["total"]["fs_invocations"] > 0,
              f"{p['path']}: {p['total']} over {n} runs; {vertices} vertices and {triangles} "
              "triangles a run expected")
    check(re.search(r"pipeline    pass 'cubes pass' .*: %d vertices in, %d primitives in"
                    % (3 * draws, draws), r.stderr), r.stderr[-3000:])
    # Secondaries: their pass gets no query (it would need inheritedQueries), counted.
    r, s = demo_run(build, demo, ["--draws", str(draws), "--secondary"], frames=12,
                    extra_env=env)
    st = s["gpu_zones"]["pipeline_stats"]
    check(not any(p["path"].startswith("pass 'cubes pass'") for p in st["passes"]) and
          st["skipped"] >= 10, st)
    # Off by default, and a bad value is said and leaves them off.
    r, s = demo_run(build, demo, [], frames=10, extra_env={"FRAMESCOPE_PIPELINE_STATS": "yes!"})
    check("FRAMESCOPE_PIPELINE_STATS='yes!' is not on or off; using off" in r.stderr,
          r.stderr[-1500:])
    check(s["gpu_zones"]["pipeline_stats"]["state"] == "off", s["gpu_zones"]["pipeline_stats"])
    print(f"pipeline statistics: {cubes[0]['measured']} runs of the draws' pass at "
          f"{3 * draws} vertices each; secondaries skipped ({st['skipped']})")


def test_validation(build, demo):
    """The validation layer below ours stays silent on all of it, Vulkan 1.0 to 1.3."""
    if not os.path.exists("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json"):
        print("validation layer not installed")
        sys.exit(77)
    cases = {
        "1.0 primaries": ["--api-version", "1.0", "--draws", "500", "--record-threads", "2"],
        "1.3 secondaries": ["--api-version", "1.3", "--draws", "500", "--record-threads", "2",
                            "--secondary", "--redundant-binds", "--leak-kb", "64"],
        "1.1 wide binds": ["--api-version", "1.1", "--draws", "500", "--wide-binds"],
    }
    for name, args in cases.items():
        r, s = demo_run(build, demo, args, frames=10,
                        layers="VK_LAYER_FRAMESCOPE:VK_LAYER_KHRONOS_validation")
        errors = r.validation_errors()
        check(not errors, f"{name}: validation errors:\n" + "\n".join(errors[:10]))
        check(s["engine"]["recording"]["recordings"] > 0, f"{name}: no recordings")
        print(f"{name}: 0 validation errors")


if __name__ == "__main__":
    main({"redundant": test_redundant, "unique": test_unique, "wide": test_wide,
          "secondary_pools": test_secondary_pools, "memory": test_memory,
          "budget": test_budget, "descriptors": test_descriptors,
          "pipeline_stats": test_pipeline_stats,
          "validation": test_validation})
