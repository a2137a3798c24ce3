#!/usr/bin/env python3
"""Runs test-stress, parses the Chrome trace it dumped and checks it against the tree.

Per thread: timestamps never go backwards, every B has its E (zero unmatched), nesting depth
is exactly what the program built, every exited thread is present, and zone counts agree
with the tree: equal where the ring never wrapped, never more where it did."""
import collections, json, os, subprocess, sys, tempfile

def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)

def main():
    exe = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        trace_path, counts_path = os.path.join(d, "trace.json"), os.path.join(d, "counts.txt")
        subprocess.run([exe, trace_path, counts_path], check=True)
        trace = json.load(open(trace_path))
        counts = open(counts_path).read().split("\n")

    ring = int(counts[0].split()[1])
    threads, tree = {}, collections.defaultdict(dict)
    for line in counts[1:]:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "thread":
            threads[int(parts[1])] = {"name": parts[2], "written": int(parts[4]), "state": int(parts[6])}
        elif parts[0] == "zone":
            tree[int(parts[1])][parts[2]] = int(parts[3])

    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"}
    by_tid = collections.defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] in "BE":
            by_tid[e["tid"]].append(e)

    wrapped = 0
    for tid, info in threads.items():
        if names.get(tid) != info["name"]:
            fail(f"thread {tid} ({info['name']}) missing from the dump after it exited")
        if info["state"] != 3:  # SLOT_EXITED
            fail(f"thread {tid} not marked exited (state {info['state']})")
        stack, last, max_depth, done = [], -1.0, 0, collections.Counter()
        for e in by_tid[tid]:
            if e["ts"] < last:
                fail(f"thread {tid}: timestamp goes backwards at {e}")
            last = e["ts"]
            if e["ph"] == "B":
                stack.append(e["name"])
                max_depth = max(max_depth, len(stack))
            else:
                if not stack:
                    fail(f"thread {tid}: unmatched E at {e['ts']}")
                name = stack.pop()
                path = "/".join(stack + [name])
                done[path] += 1
        if stack:
            fail(f"thread {tid}: {len(stack)} unmatched B")
        if max_depth != 6:
            fail(f"thread {tid}: nesting depth {max_depth}, built 6")
        if info["written"] > ring:
            wrapped += 1
        for path, n in tree[tid].items():
            seen = done.get(path, 0)
            # a zone left open at exit is closed by the dump but not yet counted by the tree
            extra = 1 if path == "d0" and int(info["name"].split("-")[1]) % 2 else 0
            if info["written"] <= ring and seen != n + extra:
                fail(f"thread {tid} {path}: trace {seen} != tree {n}")
            if seen > n + extra:
                fail(f"thread {tid} {path}: trace {seen} > tree {n}")
        if info["written"] > ring and sum(done.values()) < (ring // 2) * 0.9:
            fail(f"thread {tid}: wrapped ring kept only {sum(done.values())} zones")
    if wrapped < 4:
        fail(f"only {wrapped} rings wrapped; the test must wrap them")
    events = sum(len(v) for v in by_tid.values())
    print(f"ok: {len(threads)} threads ({wrapped} wrapped), {events} B/E events, depth 6, "
          "0 unmatched, 0 out of order")

main()
