#!/usr/bin/env python3
"""The source tree's shape, checked: which folder may include which, no file in a folder
calling into a file that calls back into it (directly or through others), and no source
file over the line limit.

usage: check_deps.py SOURCE_ROOT BUILD_DIR

Includes are read from the `#include "..."` lines. Calls are read from the build's object
files with nm: file A calls file B when A's undefined symbols include one B defines. Exit
status 0 when the tree has the shape, 1 with every violation listed when not.
"""
import json
import os
import re
import subprocess
import sys
from collections import defaultdict

# What each folder may include besides itself and the public include/ directory. An entry
# that names a file allows that header alone.
ALLOWED = {
    "src/util": set(),
    "src/present": {"src/util"},
    "src/record": {"src/present", "src/util"},
    "src/analysis": {"src/util", "src/record/format.h"},
    "src": {"src/util", "src/present", "src/record", "src/analysis"},
    "layers": {"src/util", "src/record", "src/library.h"},
    "tools": {"src/util", "src/analysis", "src/record/format.h"},
    "tools/demo": set(),
}

# Folders whose files must call each other in one direction only.
ACYCLIC = ["layers", "src/analysis", "src/present", "src/record", "src/util"]

# Longest source file allowed, in lines.
MAX_LINES = 1100

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(root, path):
    return os.path.dirname(os.path.relpath(path, root))


def resolve_include(root, folder, name):
    """The repository path a quoted include names, or None for a generated header."""
    for base in (folder, "src", "include"):
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.exists(os.path.join(root, candidate)):
            return candidate
    return None


def source_files(root):
    for top in ("src", "layers", "tools"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    yield os.path.join(dirpath, name)


def check_includes(root):
    problems = []
    for path in source_files(root):
        folder = folder_of(root, path)
        if folder not in ALLOWED:
            problems.append(f"{os.path.relpath(path, root)}: folder {folder} has no place in "
                            "tests/check_deps.py's ALLOWED table")
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for name in INCLUDE_RE.findall(text):
            target = resolve_include(root, folder, name)
            if target is None:
                continue
            target_folder = os.path.dirname(target)
            if target_folder in (folder, "include"):
                continue
            allowed = ALLOWED[folder]
            if target_folder in allowed or target in allowed:
                continue
            problems.append(f"{os.path.relpath(path, root)}: includes {target}, but {folder}/ may "
                            f"include only {', '.join(sorted(allowed)) or 'itself'} (and include/)")
    return problems


def check_lengths(root):
    problems = []
    for path in source_files(root):
        with open(path, encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        if lines > MAX_LINES:
            problems.append(f"{os.path.relpath(path, root)}: {lines} lines, over the limit of "
                            f"{MAX_LINES}: split it by responsibility")
    return problems


def nm_symbols(obj):
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRCVW" and kind.isupper():
            defined.add(name)
    return defined, undefined


def objects_by_source(root, build):
    """One object file per source file of the tree, from the build's compile commands."""
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        commands = json.load(f)
    found = {}
    for entry in commands:
        source = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        rel = os.path.relpath(source, root)
        if rel.startswith("..") or rel in found:
            continue
        output = entry.get("output")
        if output is None:
            match = re.search(r"-o\s+(\S+)", entry.get("command", ""))
            output = match.group(1) if match else None
        if output is None:
            continue
        obj = os.path.join(entry["directory"], output)
        if os.path.exists(obj):
            found[rel] = obj
    return found


def strongly_connected(nodes, edges):
    """Tarjan's algorithm, iterative: the components of the call graph."""
    index, low, on_stack, stack, result = {}, {}, set(), [], []
    counter = [0]
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                result.append(sorted(component))
    return result


def check_calls(root, build):
    problems = []
    objects = objects_by_source(root, build)
    for folder in ACYCLIC:
        files = sorted(f for f in objects if os.path.dirname(f) == folder and f.endswith(".c"))
        if not files:
            problems.append(f"{folder}: no object files found in {build}: build the tree first")
            continue
        symbols = {f: nm_symbols(objects[f]) for f in files}
        definer = {}
        for f in files:
            for name in symbols[f][0]:
                definer.setdefault(name, f)
        edges = defaultdict(set)
        why = defaultdict(list)
        for f in files:
            for name in sorted(symbols[f][1]):
                target = definer.get(name)
                if target and target != f:
                    edges[f].add(target)
                    why[(f, target)].append(name)
        for component in strongly_connected(files, edges):
            if len(component) < 2:
                continue
            members = set(component)
            lines = [f"{folder}: these files call each other in a circle: "
                     + ", ".join(os.path.basename(m) for m in component)]
            for a in component:
                for b in sorted(edges[a] & members):
                    names = why[(a, b)]
                    more = f" (+{len(names) - 3} more)" if len(names) > 3 else ""
                    lines.append(f"    {os.path.basename(a)} -> {os.path.basename(b)}: "
                                 f"{', '.join(names[:3])}{more}")
            problems.append("\n".join(lines))
    return problems


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    problems = check_includes(root) + check_lengths(root) + check_calls(root, build)
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_deps: {len(problems)} problem(s)")
        return 1
    print("check_deps: includes go one way, no circles of calls in "
          f"{', '.join(ACYCLIC)}, no file over {MAX_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
