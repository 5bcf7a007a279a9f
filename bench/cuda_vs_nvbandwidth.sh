#!/usr/bin/env bash
# Side by side, in one invocation: `xferbench copy --backend cuda` and
# nvbandwidth (v0.8, built by ../shared/peers/build.sh) on the same buffer
# size: h2d and d2h by copy engine (dma) and by SM kernels (core, direct with
# --tile 0, as nvbandwidth's kernels are; the staged kernel is shown beside),
# d2d (`copy -t d2d` against `device_local_copy`), and with 2 or more GPUs the
# p2p matrices (dma against the CE write case, core against the SM write
# case). Prints GB/s of both and the ratio xferbench/nvbandwidth; the target
# is >= 0.97 in every case. Where no GPU is usable it prints
# `waived: <reason>` and exits 0.
#
#   bench/cuda_vs_nvbandwidth.sh PEER_DIR [XFERBENCH] [MIB] [ITERS]
#   (defaults: build/default/xferbench, 512 MiB = nvbandwidth's default, 20)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
peers=${1:?usage: cuda_vs_nvbandwidth.sh PEER_DIR (the folder ../shared/peers/build.sh wrote)}
xb=${2:-$here/../build/default/xferbench}
mib=${3:-512}
iters=${4:-20}
# shellcheck source=bench/cuda_common.sh
. "$here/cuda_common.sh"
[ -x "$peers/nvbandwidth" ] || { echo "no nvbandwidth in $peers (../shared/peers/build.sh $peers)"; exit 2; }

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cases="host_to_device_memcpy_ce device_to_host_memcpy_ce host_to_device_memcpy_sm
       device_to_host_memcpy_sm device_local_copy"
[ "$gpus" -ge 2 ] && cases="$cases device_to_device_memcpy_write_ce device_to_device_memcpy_write_sm"
# shellcheck disable=SC2086
"$peers/nvbandwidth" -j -b "$mib" -t $cases > "$tmp/nvb.json"
x() { "$xb" copy --backend cuda -s "${mib}M" -w 3 -n "$iters" --format json -q "$@"; }
x -d 0 -t h2d,d2h,d2d --method dma -o "$tmp/xb_dma.json"
x -d 0 -t h2d,d2h --method core --tile 0 -o "$tmp/xb_direct.json"
x -d 0 -t h2d,d2h,d2d --method core -o "$tmp/xb_staged.json"
[ "$gpus" -ge 2 ] && x -t p2p --method dma -o "$tmp/xb_p2p_dma.json"
[ "$gpus" -ge 2 ] && x -t p2p --method core --tile 0 -o "$tmp/xb_p2p_core.json"

"$py" - "$tmp" "$gpus" "$mib" <<'PY'
import json, os, sys
tmp, gpus, mib = sys.argv[1], int(sys.argv[2]), sys.argv[3]
nvb = {t["name"]: t for t in json.load(open(f"{tmp}/nvb.json"))["nvbandwidth"]["testcases"]}

def cell(name, row, col):
    t = nvb.get(name)
    if not t or t.get("status") != "Passed":
        return None
    v = t["bandwidth_matrix"][row][col]
    return None if v == "N/A" else float(v)

def gpu0(name):  # host<->GPU and local cases are one row of GPUs: GPU 0 is [0][0]
    return cell(name, 0, 0)

def xb(file, kase, src=None, dst=None):
    path = f"{tmp}/{file}"
    if not os.path.exists(path):
        return None
    for r in json.load(open(path))["results"]:
        if r["case"] == kase and r["status"] == "ok" and (src is None or (r["src"], r["dst"]) == (src, dst)):
            return r["gbps"]["median"]
    return None

rows = [("h2d CE", gpu0("host_to_device_memcpy_ce"), xb("xb_dma.json", "h2d"), None),
        ("d2h CE", gpu0("device_to_host_memcpy_ce"), xb("xb_dma.json", "d2h"), None),
        ("h2d SM", gpu0("host_to_device_memcpy_sm"), xb("xb_direct.json", "h2d"), xb("xb_staged.json", "h2d")),
        ("d2h SM", gpu0("device_to_host_memcpy_sm"), xb("xb_direct.json", "d2h"), xb("xb_staged.json", "d2h")),
        ("d2d CE", gpu0("device_local_copy"), xb("xb_dma.json", "d2d"), xb("xb_staged.json", "d2d"))]
for s in range(gpus if gpus >= 2 else 0):
    for d in range(gpus):
        if s != d:
            rows.append((f"p2p {s}->{d} CE", cell("device_to_device_memcpy_write_ce", s, d),
                         xb("xb_p2p_dma.json", "p2p", s, d), None))
            rows.append((f"p2p {s}->{d} SM", cell("device_to_device_memcpy_write_sm", s, d),
                         xb("xb_p2p_core.json", "p2p", s, d), None))
ok = True
print(f"GB/s at {mib} MiB (1e9 B/s, bytes counted once); ratio = xferbench / nvbandwidth; target >= 0.97")
print(f"{'case':<16}{'nvbandwidth':>12}{'xferbench':>11}{'ratio':>8}{'staged core':>13}")
for name, peer, mine, staged in rows:
    if peer is None or mine is None:
        print(f"{name:<16}{'n/a':>12}{'n/a':>11}")
        continue
    ratio = mine / peer
    ok = ok and ratio >= 0.97
    extra = f"{staged:>13.1f}" if staged is not None else ""
    print(f"{name:<16}{peer:>12.1f}{mine:>11.1f}{ratio:>8.3f}{extra}")
print(f"every case >= 0.97: {'PASS' if ok else 'MISS'}")
sys.exit(0 if ok else 1)
PY
