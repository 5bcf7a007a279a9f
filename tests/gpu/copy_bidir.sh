#!/bin/sh
# copy_bidir.sh XFERBENCH --method M [--tile N]: host_bidir on GPU 0 at 256 MiB
# (CTest label `gpu`; CUDA review 2, N3). Both directions at once must add
# up: host_bidir_total >= 1.5 x the faster one-way copy (h2d or d2h alone),
# since PCIe is full duplex and each direction has its own copy engine;
# >= 1.25 x with --method core, where each direction has half the SMs and
# the h2d kernels' reads share the link with the d2h writes (1.40-1.49 x
# on an H200, PCIe Gen5). Legs run one after another would give about
# 1.0 x (the harmonic mean of the two), so either line tells them apart.
# SM kernels that cannot all be resident at once make a `waived` record
# saying so, which passes. Where no GPU is usable, exit 77 with
# gpu_cli.sh's reason.
xb=$1
shift
here=$(dirname "$0")
skip=$("$here/gpu_cli.sh" "$xb" . - list --backend cuda 2>&1)
rc=$?
[ $rc -eq 0 ] || { echo "$skip"; exit $rc; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$xb" copy --backend cuda -t h2d,d2h --bidir -d 0 -s 256M -n 10 -w 3 --format json -q -o "$out" \
  "$@" || { echo "FAIL: copy exited $?"; exit 1; }
case " $* " in *" core "*) want=1.25 ;; *) want=1.5 ;; esac
/usr/bin/python3 - "$out" "$want" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
want = float(sys.argv[2])
def one(kase):
    r = [x for x in res if x["case"] == kase]
    assert len(r) == 1, (kase, r)
    return r[0]
total = one("host_bidir_total")
if total["status"] == "waived":
    assert "resident" in total["reason"], total["reason"]
    print("waived, as allowed:", total["reason"])
    sys.exit(0)
for r in res:
    assert r["status"] == "ok" and r["verified"] is True, r
best = max(one("h2d")["gbps"]["median"], one("d2h")["gbps"]["median"])
got = total["gbps"]["median"]
print(f"h2d {one('h2d')['gbps']['median']:.1f}  d2h {one('d2h')['gbps']['median']:.1f}  "
      f"host_bidir_total {got:.1f} GB/s = {got / best:.2f} x the faster direction (want >= {want})")
assert got >= want * best, "both directions at once do not add up: the legs ran one after another?"
PY
