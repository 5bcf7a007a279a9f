#!/usr/bin/env bash
# latency end to end: latency.sh XFERBENCH MPIEXEC SCENARIO
#   nodes   one process, XFERBENCH_HOST_DEVICES=2: the chase of every node
#           pair (2 x 2) ok and verified; the ping-pong waived (one rank)
#   ranks2  mpiexec -n 2, chase and ping-pong: every record ok and verified
# Each record's percentiles must be ordered (min <= p50 <= p99 <= max, the
# mean within), and the JSON must say what a sample is.
set -u
xb=$1 mpiexec=$2 scenario=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL [$scenario]: $*"; tail -30 "$tmp/out"; exit 1; }
args=(latency --backend host --chain 2M --loads 256 -n 30 -w 2 -b 8 -e 4K -f 8 --format json
      -o "$tmp/l.json")
case $scenario in
  nodes) XFERBENCH_HOST_DEVICES=2 "$xb" "${args[@]}" >"$tmp/out" 2>&1 ;;
  ranks2) XFERBENCH_HOST_DEVICES=2 "$mpiexec" -n 2 "$xb" "${args[@]}" >"$tmp/out" 2>&1 ;;
  *) fail "unknown scenario" ;;
esac
rc=$?
[ "$rc" = 0 ] || fail "exit $rc, expected 0"
python3 - "$tmp/l.json" "$scenario" <<'PY' || fail "the records are wrong"
import json, sys
doc, scenario = json.load(open(sys.argv[1])), sys.argv[2]
res = doc["results"]
chase = [r for r in res if r["case"] == "chase"]
pp = [r for r in res if r["case"] == "pingpong"]
ok = True
def bad(why, r=None):
    global ok
    ok = False
    print("bad:", why, json.dumps(r) if r else "")
pairs = sorted((r["src"], r["dst"]) for r in chase)
if pairs != [(0, 0), (0, 1), (1, 0), (1, 1)]:
    bad(f"chase pairs {pairs}, expected every pair of 2 devices")
if [r["bytes"] for r in pp] != [8, 64, 512, 4096]:
    bad(f"ping-pong sizes {[r['bytes'] for r in pp]}")
for r in chase:
    if r["chain_bytes"] != 2 << 20 or r["lines"] != (2 << 20) // 64 or r["loads"] != 256:
        bad("chase fields", r)
    if "ns per load" not in r["sample"]:
        bad("chase sample", r)
for r in pp:
    if "round trip / 2" not in r["sample"]:
        bad("ping-pong sample", r)
measured = chase + (pp if scenario == "ranks2" else [])
for r in measured:
    t = r["time_us"]
    if r["status"] != "ok" or r["verified"] is not True or r["iters"] != 30:
        bad("not ok and verified", r)
    if not (0 < t["min"] <= t["median"] <= t["p99"] <= t["max"] and t["min"] <= t["mean"] <= t["max"]):
        bad("percentiles out of order", r)
if scenario == "nodes":
    for r in pp:
        if r["status"] != "waived" or "needs 2 ranks (mpiexec -n 2" not in r["reason"]:
            bad("one rank: ping-pong not waived with its reason", r)
p50 = {(r["src"], r["dst"]): round(r["time_us"]["median"] * 1e3, 1) for r in chase}
print(f"chase p50 ns {p50}; ping-pong p50 us", [r["time_us"]["median"] for r in pp])
sys.exit(0 if ok else 1)
PY
echo "ok [$scenario]"
