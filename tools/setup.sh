#!/usr/bin/env bash
# Sets up a Debian 12 machine for framescope and then does one job:
#   tools/setup.sh demo   build, then profile the bundled demo workload and print the summary
#                         (under a private headless Weston when no Wayland session exists)
#   tools/setup.sh test   build with -Werror, then run every test; then again under
#                         AddressSanitizer + UndefinedBehaviorSanitizer, and the
#                         multi-threaded patterns under ThreadSanitizer
#   tools/setup.sh bench  build, then run the benchmarks (installs mangohud for comparison)
set -euo pipefail
cd "$(dirname "$0")/.."

job=${1:-}
case "$job" in
    demo|test|bench) ;;
    *) echo "usage: tools/setup.sh demo|test|bench" >&2; exit 2 ;;
esac

mapfile -t packages < tools/debian-packages.txt
[ "$job" = bench ] && packages+=(mangohud)
missing=()
for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "${missing[@]}"
fi

build=build
if [ ! -f "$build/build.ninja" ]; then
    werror=false
    [ "$job" = test ] && werror=true
    meson setup "$build" -Dwerror=$werror
fi
ninja -C "$build"

case "$job" in
    demo)  exec "$build/tools/framescope" run ;;
    test)
        # The wake-up chain reads the scheduler's tracepoints' formats from tracefs, which a
        # fresh machine may not have mounted (hitches-wakeups then has nothing to check).
        if [ "$(id -u)" -eq 0 ] && [ -d /sys/kernel/tracing ] &&
            [ ! -e /sys/kernel/tracing/events ]; then
            mount -t tracefs nodev /sys/kernel/tracing ||
                echo "setup: could not mount tracefs; hitches-wakeups will skip" >&2
        fi
        meson test -C "$build" --print-errorlogs
        # Once more with ASan + UBSan. Leak checking is off: Mesa and the Vulkan loader keep
        # allocations until exit. vkcube is not built with ASan, so its runtime is preloaded there.
        [ -f build-asan/build.ninja ] ||
            meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true
        ninja -C build-asan
        FSCOPE_TEST_PRELOAD="$(gcc -print-file-name=libasan.so)" \
            ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
            UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
            meson test -C build-asan --print-errorlogs --no-suite tsan
        # The multi-threaded patterns under TSan (tests/test_tsan.py says which and why).
        # -Wno-tsan: GCC warns that TSan does not model atomic_thread_fence; the fields those
        # fences order are atomics themselves, so nothing relies on it.
        [ -f build-tsan/build.ninja ] ||
            meson setup build-tsan -Db_sanitize=thread -Db_lundef=false -Dwerror=true \
                -Dc_args=-Wno-tsan
        ninja -C build-tsan
        exec meson test -C build-tsan --print-errorlogs --suite tsan ;;
    bench) exec meson test -C "$build" --benchmark --verbose ;;
esac
