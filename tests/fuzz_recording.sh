#!/bin/sh
# Fuzzes the recording reader and the analysis behind `framescope report` with libFuzzer
# (clang-14, ASan and UBSan), seeded with a real recording of the demo (tests/fuzz-arena.h
# says how an input holds it). A benchmark: it prints how many inputs ran and fails on the
# first crash, leak, undefined behaviour or report out of proportion to its recording; the
# input that caused it is kept as BUILD_DIR/fuzz-recording-crash-*.
#   usage: fuzz_recording.sh BUILD_DIR [SECONDS]   (default 120 s)
set -eu
build=$(cd "$1" && pwd)
seconds=${2:-120}
src=$(cd "$(dirname "$0")/.." && pwd)
command -v clang-14 >/dev/null || { echo "clang-14 not installed: skipped"; exit 77; }
work=$(mktemp -d /tmp/fscope-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
clang-14 -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I "$src/include" -I "$src/src" -I "$src/tests" \
    "$src/tests/fuzz-recording.c" "$src"/src/analysis/*.c "$src"/src/util/*.c -lzstd -lm \
    -o "$work/fuzz-recording"
# The seeds: a small real recording (a short ring keeps it small), from framescope run, as
# the capture packs it (its ranges compact: the decoder's input) and as its arena.
mkdir "$work/corpus"
mkdir -m 700 "$work/runtime"
XDG_RUNTIME_DIR="$work/runtime" FRAMESCOPE_RING_EVENTS=64 \
    "$build/tools/framescope" run --summary off --output "$work/seed" -- \
    "$build/tools/demo/framescope-demo" --quiet --frames 8 >/dev/null
"$work/fuzz-recording" --encode "$work/seed/recording.fsr" "$work/corpus/demo-packed"
"$work/fuzz-recording" --encode-arena "$work/seed/recording.fsr" "$work/corpus/demo"
"$work/fuzz-recording" --check "$work/corpus/demo-packed"
"$work/fuzz-recording" --check "$work/corpus/demo"
# Room for mutations to add objects and bytes: four times the larger seed.
size=$(($(stat -c %s "$work/corpus/demo") * 4))
status=0
"$work/fuzz-recording" -max_total_time="$seconds" -max_len="$size" -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$build/fuzz-recording-" "$work/corpus" \
    > "$work/log" 2>&1 || status=$?
tail -n 25 "$work/log"
exit "$status"
