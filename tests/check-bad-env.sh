#!/bin/sh
# Malformed FRAMESCOPE_DETAIL / FRAMESCOPE_RING_EVENTS, written the ways users get them wrong:
# one warning line per variable however many entries are bad, the value echoed with its control
# characters escaped, and the good parts still used (asserted inside test-zones --bad-env:
# frame/render=2 applies, no near-miss spelling of update=2 does, the ring keeps its default).
set -eu
zones=$1
nl='
'
# Not echo: dash's echo turns the \n of an escaped value back into a newline.
show() {
    printf '%s\n' "$out"
}
fail() {
    show | head -n 40
    echo "FAIL: $*"
    exit 1
}

# 14,000 bad entries around one good one: the first has a newline, then every near-miss of a
# level (whitespace, hex, sign, leading zero, fraction), then filler.
near_misses="update= 2,update=2 ,update=0x2,update=+2,update=02,update=2.0,update=-0,update=abc"
filler=$(awk 'BEGIN { for (i = 0; i < 13989; i++) printf ",x=9" }')
detail="x=1${nl},frame/render=2,bogus,=,${near_misses}${filler}"
out=$(FRAMESCOPE_DETAIL="$detail" FRAMESCOPE_RING_EVENTS="64${nl}framescope: forged" \
      "$zones" --bad-env 2>&1) || fail "test-zones --bad-env failed"
[ "$(show | grep -c 'FRAMESCOPE_DETAIL')" -eq 1 ] || fail "FRAMESCOPE_DETAIL: not one line"
want="warning: FRAMESCOPE_DETAIL: ignored 14000 of 14001 entries; the first: 'x=1\\n' ("
show | grep -qF "$want" || fail "FRAMESCOPE_DETAIL warning does not say: $want"
want="warning: FRAMESCOPE_RING_EVENTS='64\\nframescope: forged' is not a whole number"
show | grep -qF "$want" || fail "FRAMESCOPE_RING_EVENTS warning does not say: $want"
show | grep -q '^framescope: forged' && fail "a newline in a value forged a line"
[ "$(show | grep -c warning)" -eq 2 ] || fail "expected exactly 2 warnings"
show | grep -qx ok || fail "test-zones did not finish"
echo "14000 bad FRAMESCOPE_DETAIL entries: one warning; newline escaped"

# Every near-miss of a number is refused the same way (the ring keeps its default).
for value in ' 64' '64 ' '0x40' '+64' '064' '64.0' '6.4e1' '-64' 'inf' ''; do
    out=$(FRAMESCOPE_DETAIL=frame/render=2 FRAMESCOPE_RING_EVENTS="$value" \
          "$zones" --bad-env 2>&1) ||
        fail "FRAMESCOPE_RING_EVENTS='$value': test-zones failed"
    [ "$(show | grep -c warning)" -eq 1 ] &&
        show | grep -qF "warning: FRAMESCOPE_RING_EVENTS='$value' is not a whole number" ||
        fail "FRAMESCOPE_RING_EVENTS='$value': not one warning naming it"
done
echo "FRAMESCOPE_RING_EVENTS: whitespace, hex, sign, leading zero, fraction, exponent refused"
