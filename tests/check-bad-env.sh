#!/bin/sh
# Malformed FRAMESCOPE_DETAIL / FRAMESCOPE_RING_EVENTS: one warning per bad token, naming it,
# and the good parts still used (asserted inside test-zones --bad-env).
set -eu
out=$(FRAMESCOPE_DETAIL='frame/render=2,bogus,x=9,update=abc' FRAMESCOPE_RING_EVENTS=abc \
      "$1" --bad-env 2>&1)
echo "$out"
for want in "'bogus'" "'x=9'" "'update=abc'" "FRAMESCOPE_RING_EVENTS=abc"; do
    echo "$out" | grep -q "warning: .*$want" || { echo "missing warning for $want"; exit 1; }
done
[ "$(echo "$out" | grep -c warning)" -eq 4 ] || { echo "expected exactly 4 warnings"; exit 1; }
echo "$out" | grep -qx ok
