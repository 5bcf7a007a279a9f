#!/usr/bin/env bash
# fleet on one machine, its "hosts" being ranks: fleet.sh XFERBENCH MPIEXEC SCENARIO
#
# Five ranks under mpiexec; XFERBENCH_HOST_THROTTLE's rank entries really
# slow what a rank sends or receives (a slow "host") or what two ranks send
# each other (a slow "link"). Each scenario checks the exit code and the
# JSON summary: the throttled host or link named, nobody else blamed.
#   nofault   no throttle: exit 0, nothing named
#   host      rank3:0.02 (both ways): slow_hosts = #3, no link
#   receive   rank2:0.02:rx: slow_hosts = #2, its receive path
#   link      rank1-rank2:0.02: slow_links = #1<->#2, no host
#   quick     as host, with --quick (4 random matchings a pass: 8 pairs in 2 passes)
#   corrupt   XFERBENCH_HOST_CORRUPT=25%:rank1-rank2 with --check every: #1<->#2 FAIL for
#             wrong data at its normal speed (its figure within the others'), no host
# Five ranks on a busy 2-core machine: a transfer that has to wait for its
# partner's turn on a core takes a scheduler slice (about 2 ms), so 8 MiB
# transfers keep such a pair above 0.15 of the others, the faults (0.02)
# far below the FAIL line of 0.1.
# FLEET_REPS=N runs the scenario N times in a row (all must pass).
set -u
xb=$1 mpiexec=$2 scenario=$3
reps=${FLEET_REPS:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL [$scenario]: $*"; tail -30 "$tmp/out"; exit 1; }

extra="" corrupt=""
case $scenario in
  nofault) throttle="" want_rc=0 hosts="" links="" ;;
  host) throttle=rank3:0.02 want_rc=1 hosts="#3" links="" ;;
  receive) throttle=rank2:0.02:rx want_rc=1 hosts="#2" links="" ;;
  link) throttle=rank1-rank2:0.02 want_rc=1 hosts="" links="#1<->#2" ;;
  quick) throttle=rank3:0.02 want_rc=1 hosts="#3" links="" extra=--quick ;;
  corrupt) throttle="" corrupt=25%:rank1-rank2 want_rc=1 hosts="" links="#1<->#2" \
    extra="--check every" ;;
  *) fail "unknown scenario" ;;
esac

for rep in $(seq "$reps"); do
  XFERBENCH_HOST_CORRUPT=$corrupt XFERBENCH_HOST_THROTTLE=$throttle "$mpiexec" -n 5 "$xb" fleet \
    --backend host -s 8M -n 3 -w 0 \
    --pings 50 --concurrency 1 --passes 2 --threshold 0.1 --no-census --format json $extra \
    -o "$tmp/f.json" >"$tmp/out" 2>&1
  rc=$?
  [ "$rc" = "$want_rc" ] || fail "run $rep: exit $rc, expected $want_rc"
  python3 - "$tmp/f.json" "$hosts" "$links" "$scenario" <<'PY' || fail "run $rep: the summary is wrong"
import json, sys
doc = json.load(open(sys.argv[1]))
s = doc["summary"]
def members(text):  # "vm#3,vm#4" -> ["#3", "#4"]; "a#1<->a#2" -> ["#1<->#2"]
    out = []
    for item in filter(None, text.split(",")):
        out.append("<->".join("#" + end.rsplit("#", 1)[1] for end in item.split("<->")))
    return ",".join(out)
got_h, got_l = members(s["slow_hosts"]), members(s["slow_links"])
ok = got_h == sys.argv[2] and got_l == sys.argv[3]
if sys.argv[4] == "receive":
    why = [r["why"] for r in doc["results"] if r["case"] == "host" and r["verdict"] == "FAIL"]
    ok = ok and any("receive path" in w for w in why)
if sys.argv[4] == "corrupt":
    # FAIL for wrong data, with its count and interval, at a speed the others have.
    rows = [r for r in doc["results"] if r["case"] == "link" and r["verdict"] == "FAIL"]
    ok = ok and len(rows) == 1 and rows[0]["why"].startswith("wrong data in ")
    ok = ok and "95 % interval" in rows[0]["why"] and "first: iteration" in rows[0]["why"]
    ok = ok and rows[0]["measured"] >= 0.5 * s["reference_gbps"]
    ok = ok and ("reproduced" in rows[0]["why"])  # confirmation checked it again
    bad = [r for r in doc["results"] if r.get("wrong_iters", 0) > 0]
    ends = {frozenset((r["src"], r["dst"])) for r in bad}
    ok = ok and bad and ends == {frozenset((1, 2))}  # only the link's transfers
    ok = ok and all(r["checked_iters"] >= 1 and r["status"] == "failed" for r in bad)
    print(rows[0]["why"] if rows else "no link row")
sends = [r for r in doc["results"] if r["case"] == "send" and not r.get("confirm")]
pairs = 4 * 2 * 2 if sys.argv[4] == "quick" else 10 * 2  # quick: 2 pairs a matching, 4 a pass
ok = ok and len(sends) == 2 * pairs  # both directions
ok = ok and doc["params"]["schedule"].startswith("quick" if sys.argv[4] == "quick" else "every pair")
print(f"slow_hosts={s['slow_hosts']!r} slow_links={s['slow_links']!r} sends={len(sends)}")
sys.exit(0 if ok else 1)
PY
  echo "ok [$scenario] run $rep: exit $rc"
done
