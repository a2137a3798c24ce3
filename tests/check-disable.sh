#!/bin/sh
# The normal build must contain every zone name (or this check proves nothing); the
# -DFRAMESCOPE_DISABLE build must contain none.
set -eu
enabled=$1 disabled=$2
for name in probe_zone_alpha probe_zone_beta probe_zone_gamma probe_thread_delta; do
    grep -qa "$name" "$enabled" || { echo "FAIL: $name missing from the enabled build"; exit 1; }
    if grep -qa "$name" "$disabled"; then echo "FAIL: $name in the disabled build"; exit 1; fi
done
"$disabled" >/dev/null
echo "ok: 4 names in the enabled build, 0 in the disabled build"
