#!/bin/sh
# Fuzzes what framescope diff and compare read from capture directories (summary.json through
# jansson, frames.csv, zones.csv) and the tables they print, with libFuzzer (clang-14, ASan and
# UBSan), seeded with a real capture of the demo. A benchmark: it prints how many inputs ran
# and fails on the first crash, leak or undefined behaviour; the input that caused it is kept
# as BUILD_DIR/fuzz-compare-crash-* (tests/fuzz-compare.c says how an input is laid out).
#   usage: fuzz_compare.sh BUILD_DIR [SECONDS]   (default 120 s)
set -eu
build=$(cd "$1" && pwd)
seconds=${2:-120}
src=$(cd "$(dirname "$0")/.." && pwd)
command -v clang-14 >/dev/null || { echo "clang-14 not installed: skipped"; exit 77; }
pkg-config --exists jansson || { echo "jansson (libjansson-dev) not installed: skipped"; exit 77; }
work=$(mktemp -d /tmp/fscope-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
# jansson is Debian's build, not instrumented: it is fuzzed where it is developed (OSS-Fuzz);
# here the sanitizers watch what compare does with what jansson returns.
clang-14 -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I "$src/include" -I "$src/src" -I "$src/tools" \
    $(pkg-config --cflags jansson) \
    "$src/tests/fuzz-compare.c" "$src"/tools/compare.c "$src"/tools/diff.c "$src"/tools/compare_rows.c \
    "$src"/tools/capture_files.c "$src/tools/cli.c" "$src/tools/child.c" \
    "$src"/src/util/*.c $(pkg-config --libs jansson) -lzstd -lm -o "$work/fuzz-compare"
# The seed: a real capture of the demo, its three files as A and again as B.
mkdir "$work/corpus"
mkdir -m 700 "$work/runtime"
XDG_RUNTIME_DIR="$work/runtime" \
    "$build/tools/framescope" run --summary off --output "$work/seed" -- \
    "$build/tools/demo/framescope-demo" --quiet --frames 30 >/dev/null
for side in A B; do
    for file in summary.json frames.csv zones.csv; do
        cat "$work/seed/$file"
        [ "$side$file" = Bzones.csv ] || printf '\036'
    done
done > "$work/corpus/demo"
size=$(stat -c %s "$work/corpus/demo")
status=0
# Inputs up to twice the seed, so that files can grow as well as shrink.
"$work/fuzz-compare" -max_total_time="$seconds" -max_len="$((2 * size))" -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$build/fuzz-compare-" "$work/corpus" \
    > "$work/log" 2>&1 || status=$?
tail -n 25 "$work/log"
exit "$status"
