#!/usr/bin/env bash
# fleet's census on a host where it never finishes (the test seam
# XFERBENCH_TEST_STALL=census; a device or library call that stopped
# answering, CUDA review N1): fleet_census.sh XFERBENCH MPIEXEC
# The host's census row is a FAIL naming --census-deadline, the pair rounds
# still run, the run exits 1 and does not wait for the stuck census.
set -u
xb=$1 mpiexec=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; tail -30 "$tmp/out"; exit 1; }
start=$SECONDS
XFERBENCH_TEST_STALL=census timeout 100 "$mpiexec" -n 2 "$xb" fleet --backend host -s 1M -n 2 \
  --pings 10 --census-deadline 2 --format json -o "$tmp/f.json" >"$tmp/out" 2>&1
rc=$?
echo "exit $rc after $((SECONDS - start)) s"
[ $rc -eq 1 ] || fail "exit $rc, expected 1 (124: it waited for the census)"
grep -q "the census did not finish within 2 s" "$tmp/out" || fail "no line on stderr"
python3 - "$tmp/f.json" <<'PY' || fail "the records are wrong"
import json, sys
doc = json.load(open(sys.argv[1]))
census = [r for r in doc["results"] if r["case"] == "census"]
assert len(census) == 1 and census[0]["verdict"] == "FAIL", census
assert "did not finish within 2 s (--census-deadline)" in census[0]["why"], census[0]
sends = [r for r in doc["results"] if r["case"] == "send" and r["status"] == "ok"]
assert sends, "the pair rounds did not run"
print("census:", census[0]["why"][:100], "| sends ok:", len(sends))
PY
echo ok
