#!/usr/bin/env bash
# copy_patterns.sh XFERBENCH SCENARIO: the concurrent copy patterns on the
# host backend with three devices (XFERBENCH_HOST_DEVICES=3): every record ok
# and verified, the legs and the sum each group must have, the sum timed to
# the last leg's end, and the tables that show them.
set -euo pipefail
xb=$1
scenario=$2
py=$(command -v /usr/bin/python3 || command -v python3)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XFERBENCH_HOST_DEVICES=3
run() { "$xb" copy --backend host -n 3 -w 1 -q "$@"; }

check() {  # check FILE PYTHON: asserts over `res` (the records) in FILE
  "$py" - "$1" "$2" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
def legs(kase, **kw):
    return [r for r in res if r["case"] == kase and all(r[k] == v for k, v in kw.items())]
for r in res:
    assert r["status"] == "ok" and r["verified"] is True, r
exec(sys.argv[2])
PY
}

case $scenario in
  concurrent)
    run -t all_to_host,host_to_all,all_to_one,one_to_all -s 1M --format json -o "$tmp/c.json"
    check "$tmp/c.json" '
# each device and the sum, one group per pattern, and for all_to_one/one_to_all one per device
assert sorted(r["src"] for r in legs("all_to_host", method="dma")) == [0, 1, 2]
assert {r["dst"] for r in legs("all_to_host")} == {-1}
assert sorted(r["dst"] for r in legs("host_to_all", method="core")) == [0, 1, 2]
assert len(legs("all_to_one")) == 2 * 3 * 2 and len(legs("one_to_all")) == 2 * 3 * 2
for kase, ends in (("all_to_host", (-2, -1)), ("host_to_all", (-1, -2))):
    tot = legs(kase + "_total")
    assert len(tot) == 2 and all((t["src"], t["dst"]) == ends and t["bytes"] == 3 << 20 for t in tot), tot
for one in range(3):
    into = legs("all_to_one", dst=one, method="dma")
    assert sorted(r["src"] for r in into) == [d for d in range(3) if d != one], into
    assert len(legs("all_to_one_total", src=-2, dst=one)) == 2
    assert len(legs("one_to_all_total", src=one, dst=-2)) == 2
# the sum is timed to the last leg: never shorter than a leg, never more than the legs added up
# (where legs and sum come from one batch; all_to_host and host_to_all time each leg in a
# batch of its own, against the others at twice its size, as nvbandwidth does)
groups = [("all_to_one", {"dst": o}) for o in range(3)] + [("one_to_all", {"src": o}) for o in range(3)]
for kase, at in groups:
    for m in ("dma", "core"):
        ls = legs(kase, method=m, **at)
        t = [x for x in legs(kase + "_total", method=m)
             if all(x[k] == v for k, v in at.items())]
        assert len(t) == 1, (kase, at, m, t)
        t = t[0]
        assert t["time_us"]["median"] >= max(l["time_us"]["median"] for l in ls) * 0.999, (t, ls)
        assert t["gbps"]["median"] <= sum(l["gbps"]["median"] for l in ls) * 1.001, (t, ls)
# never a bidir record for groups that go one way
assert not [r for r in res if "bidir" in r["case"]]
'
    run -t all_to_host,one_to_all -s 1M --method dma > "$tmp/t.txt"
    grep -q "All Devices to Host Test (all_to_host) · every device -> host at once · method dma" "$tmp/t.txt"
    grep -Eq "Size\(Bytes\) +Execute Times +0->host +1->host +2->host +Sum +Sum Max +Check" "$tmp/t.txt"
    grep -q "One Device to All Test (one_to_all) · device 2 -> every device at once" "$tmp/t.txt"
    ;;
  host_bidir)
    run -t h2d,d2h --bidir -d 1 -s 1M --method dma --format json -o "$tmp/b.json"
    check "$tmp/b.json" '
assert [(r["src"], r["dst"]) for r in legs("h2d")] == [(-1, 1)]
assert [(r["src"], r["dst"]) for r in legs("d2h")] == [(1, -1)]
assert [(r["src"], r["dst"]) for r in legs("host_bidir")] == [(-1, 1), (1, -1)]  # once, not per -t name
t = legs("host_bidir_total")
assert len(t) == 1 and t[0]["bytes"] == 2 << 20 and (t[0]["src"], t[0]["dst"]) == (-1, 1), t
'
    run -t h2d --bidir -d 0 -s 1M --method dma > "$tmp/t.txt"
    grep -q "Host to Device and Back at Once Test (host_bidir) · host <-> device 0 at once" "$tmp/t.txt"
    run -t all_to_host --bidir -s 1M --method dma --format json -o "$tmp/a.json"
    check "$tmp/a.json" '
b = legs("all_host_bidir")
assert sorted((r["src"], r["dst"]) for r in b) == sorted([(d, -1) for d in range(3)] + [(-1, d) for d in range(3)]), b
assert legs("all_host_bidir_total")[0]["bytes"] == 6 << 20
'
    ;;
  p2p_op)
    run -t p2p --p2p-op read,write -s 1M --method dma --format json -o "$tmp/p.json"
    check "$tmp/p.json" '
pairs = sorted((s, d) for s in range(3) for d in range(3) if s != d)
assert sorted((r["src"], r["dst"]) for r in legs("p2p_read")) == pairs
assert sorted((r["src"], r["dst"]) for r in legs("p2p")) == pairs
assert len(legs("p2p_local")) == 3  # the same-device reference once, not per operation
'
    run -t p2p --p2p-op read --bidir -s 1M --method dma > "$tmp/t.txt"
    grep -q "Unidirectional Peer to Peer Test (read: the destination pulls)" "$tmp/t.txt"
    grep -q "Bidirectional Peer to Peer Test (read: the destination pulls) .* Total Bandwidth Matrix" "$tmp/t.txt"
    if grep -q "^Unidirectional Peer to Peer Test · " "$tmp/t.txt"; then
      echo "FAIL: a write matrix without --p2p-op write"; exit 1
    fi
    ;;
  *) echo "unknown scenario $scenario"; exit 2 ;;
esac
echo "ok: $scenario"
