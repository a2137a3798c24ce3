#!/usr/bin/env bash
# The test suite on a busy machine, as on a laptop doing other things: HOGS CPU-bound
# processes (stress-ng --cpu, or shell loops without it) run beside `meson test`, RUNS times
# in a row; it stops at the first run that fails and exits with its status. The hogs are
# stopped however this script ends.
#
# usage: tests/busy_suite.sh [-j HOGS] [-n RUNS] BUILD_DIR [MESON_TEST_ARGS...]
#        (HOGS 2 and RUNS 3 by default; e.g. -j 2 -n 1 build cli-diff_captures)
set -euo pipefail

hogs=2
runs=3
while getopts "j:n:" opt; do
    case $opt in
    j) hogs=$OPTARG ;;
    n) runs=$OPTARG ;;
    *) sed -n 's/^# usage: //p' "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
if [ $# -lt 1 ] || ! [[ $hogs =~ ^[0-9]+$ && $runs =~ ^[1-9][0-9]*$ ]]; then
    sed -n 's/^# usage: //p' "$0" >&2
    exit 2
fi
build=$1
shift

hog_pids=()
stop_hogs() {
    if [ ${#hog_pids[@]} -gt 0 ]; then
        kill "${hog_pids[@]}" 2>/dev/null || true
        wait "${hog_pids[@]}" 2>/dev/null || true
        hog_pids=()
    fi
}
trap stop_hogs EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

if [ "$hogs" -gt 0 ]; then
    if command -v stress-ng >/dev/null; then
        stress-ng --cpu "$hogs" --timeout 0 >/dev/null 2>&1 &
        hog_pids+=($!)
        load="stress-ng --cpu $hogs"
    else
        for _ in $(seq "$hogs"); do
            sh -c 'while :; do :; done' &
            hog_pids+=($!)
        done
        load="$hogs shell busy loops"
    fi
else
    load="no load"
fi

for run in $(seq "$runs"); do
    echo "busy_suite: run $run of $runs beside $load ($(nproc) CPUs)"
    start=$(date +%s)
    status=0
    meson test -C "$build" --print-errorlogs "$@" || status=$?
    echo "busy_suite: run $run of $runs: exit status $status after $(( $(date +%s) - start )) s"
    if [ "$status" -ne 0 ]; then
        exit "$status"
    fi
done
