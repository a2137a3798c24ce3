#!/usr/bin/env bash
# Sets up a Debian 12 machine for framescope and then does one job:
#   tools/setup.sh demo   build, then profile the bundled demo workload and print the summary
#                         (under a private headless Weston when no Wayland session exists)
#   tools/setup.sh test   build with -Werror, then run every test
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
    test)  exec meson test -C "$build" --print-errorlogs ;;
    bench) exec meson test -C "$build" --benchmark --verbose ;;
esac
