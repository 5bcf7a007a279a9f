#!/usr/bin/env bash
# Side by side, in one invocation: every nvbandwidth (v0.8) bandwidth testcase
# and the xferbench copy pattern that measures the same thing, on the same
# buffer size, with `xferbench copy --backend cuda`. The mapping is the table
# MAP below (docs/commands/copy.md lists it): copy engine (CE) cases against --method
# dma, SM cases against --method core --tile 0 (direct loads and stores, as
# nvbandwidth's kernels are; the staged kernel is shown beside where it
# differs). Each cell of nvbandwidth's matrix is compared with xferbench's
# record for that device or pair (for all_to_one and one_to_all, the sum into
# or out of the one device: `_total`). nvbandwidth's SUM line adds the cells;
# xferbench's `_total` of all_to_host and host_to_all counts every byte over
# the time to the last copy's end, so those sums are not compared. Every
# figure compared is measured the same way on both sides: the per-device
# cells of host_bidir, all_to_host, host_to_all and all_host_bidir too (each
# copy timed against the others at twice its size, nvbandwidth's
# interference; docs/commands/copy.md). So the target is two-sided,
# 0.97 <= ratio <= 1.03 in every case: a figure above nvbandwidth's is as
# much a difference of method as one below. Prints GB/s of both and the
# ratio xferbench/nvbandwidth. Cases that need more GPUs than there are are skipped, named;
# the latency testcases belong to `xferbench latency`. Where no GPU is usable
# it prints `waived: <reason>` and exits 0.
#
#   bench/cuda_vs_nvbandwidth.sh NVBANDWIDTH_DIR [XFERBENCH] [MIB] [ITERS]
#   (defaults: build/default/xferbench, 512 MiB = nvbandwidth's default, 20)
# NVBANDWIDTH_DIR holds the nvbandwidth binary, built from
# https://github.com/NVIDIA/nvbandwidth (cmake . && make). Empty, or without
# the binary: `waived` with that hint, exit 0.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
peers=${1-}
xb=${2:-$here/../build/default/xferbench}
mib=${3:-512}
iters=${4:-20}
# shellcheck source=bench/cuda_common.sh
. "$here/cuda_common.sh"
if [ -z "$peers" ] || [ ! -x "$peers/nvbandwidth" ]; then
  echo "waived: no nvbandwidth${peers:+ in $peers}: build it from https://github.com/NVIDIA/nvbandwidth (cmake . && make) and give its folder: bench/cuda_vs_nvbandwidth.sh DIR (make bench NVBANDWIDTH=DIR)"
  exit 0
fi

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# testcase | min GPUs | xferbench -t and options (without --method) | record case | matrix: row col of the figure
MAP="host_to_device_memcpy|1|-t h2d|h2d|host d
device_to_host_memcpy|1|-t d2h|d2h|d host
host_to_device_bidirectional_memcpy|1|-t h2d --bidir|host_bidir|host d
device_to_host_bidirectional_memcpy|1|-t d2h --bidir|host_bidir|d host
all_to_host_memcpy|1|-t all_to_host|all_to_host|d host
all_to_host_bidirectional_memcpy|1|-t all_to_host --bidir|all_host_bidir|d host
host_to_all_memcpy|1|-t host_to_all|host_to_all|host d
host_to_all_bidirectional_memcpy|1|-t host_to_all --bidir|all_host_bidir|host d
device_to_device_memcpy_write|2|-t p2p|p2p|s d
device_to_device_memcpy_read|2|-t p2p --p2p-op read|p2p_read|s d
device_to_device_bidirectional_memcpy_write|2|-t p2p --bidir|p2p_bidir|s d
device_to_device_bidirectional_memcpy_read|2|-t p2p --bidir --p2p-op read|p2p_read_bidir|s d
all_to_one_write|2|-t all_to_one|all_to_one_total|all d
all_to_one_read|2|-t all_to_one --p2p-op read|all_to_one_read_total|all d
one_to_all_write|2|-t one_to_all|one_to_all_total|s all
one_to_all_read|2|-t one_to_all --p2p-op read|one_to_all_read_total|s all"
echo "$MAP" > "$tmp/map"
names=""; n=0
while IFS='|' read -r name need opts kase where; do
  if [ "$gpus" -lt "$need" ]; then echo "skipped: ${name}_{ce,sm} needs $need GPUs, this machine has $gpus"; continue; fi
  names="$names ${name}_ce ${name}_sm"
  n=$((n + 1))
  x() { # shellcheck disable=SC2086
    "$xb" copy --backend cuda -s "${mib}M" -w 3 -n "$iters" --format json -q $opts "$@"; }
  x --method dma -o "$tmp/$n.ce.json"
  x --method core --tile 0 -o "$tmp/$n.sm.json"
  if [ "$kase" = h2d ] || [ "$kase" = d2h ]; then x --method core -o "$tmp/$n.staged.json"; fi
  echo "$n|$name|$kase|$where" >> "$tmp/runs"
done < "$tmp/map"
# shellcheck disable=SC2086
"$peers/nvbandwidth" -j -b "$mib" -t $names device_local_copy > "$tmp/nvb.json"
"$xb" copy --backend cuda -s "${mib}M" -w 3 -n "$iters" --format json -q -t d2d -d 0 --method dma -o "$tmp/d2d.ce.json"

"$py" - "$tmp" "$gpus" "$mib" <<'PY'
import json, os, sys
tmp, gpus, mib = sys.argv[1], int(sys.argv[2]), sys.argv[3]
nvb = {t["name"]: t for t in json.load(open(f"{tmp}/nvb.json"))["nvbandwidth"]["testcases"]}

def peer(name, row, col):
    t = nvb.get(name)
    if not t or t.get("status") != "Passed":
        return None
    try:
        v = t["bandwidth_matrix"][row][col]
    except IndexError:
        return None
    return None if v == "N/A" else float(v)

def load(path):
    return json.load(open(path))["results"] if os.path.exists(path) else []

def mine(recs, kase, src, dst):
    for r in recs:
        if r["case"] == kase and r["status"] == "ok" and (r["src"], r["dst"]) == (src, dst):
            return r["gbps"]["median"]
    return None

# Where a figure sits: nvbandwidth's host<->device and all/one cases are one row of GPUs
# (row 0, column = the device); p2p cases are a GPU x GPU matrix.
def cells(where):
    a, b = where.split()
    if a in ("host", "all") or b in ("host", "all"):
        for g in range(gpus):
            src = -1 if a == "host" else -2 if a == "all" else g
            dst = -1 if b == "host" else -2 if b == "all" else g
            yield f"{g}", (0, g), (src, dst)
    else:
        for s in range(gpus):
            for d in range(gpus):
                if s != d:
                    yield f"{s}->{d}", (s, d), (s, d)

rows = [("device_local_copy_ce 0", peer("device_local_copy", 0, 0), mine(load(f"{tmp}/d2d.ce.json"), "d2d", 0, 0), None)]
for line in open(f"{tmp}/runs"):
    n, name, kase, where = line.strip().split("|")
    for eng in ("ce", "sm"):
        recs = load(f"{tmp}/{n}.{eng}.json")
        staged = load(f"{tmp}/{n}.staged.json") if eng == "sm" else []
        for label, (r, c), (src, dst) in cells(where):
            rows.append((f"{name}_{eng} {label}", peer(f"{name}_{eng}", r, c), mine(recs, kase, src, dst),
                         mine(staged, kase, src, dst) if staged else None))
ok = True
print(f"GB/s at {mib} MiB (1e9 B/s, bytes counted once); ratio = xferbench / nvbandwidth; target 0.97..1.03")
print(f"{'case':<52}{'nvbandwidth':>12}{'xferbench':>11}{'ratio':>8}{'staged core':>13}")
for name, theirs, ours, staged in rows:
    if theirs is None or ours is None:
        print(f"{name:<52}{'n/a' if theirs is None else f'{theirs:.1f}':>12}{'n/a' if ours is None else f'{ours:.1f}':>11}")
        continue
    ratio = ours / theirs
    ok = ok and 0.97 <= ratio <= 1.03
    extra = f"{staged:>13.1f}" if staged is not None else ""
    print(f"{name:<52}{theirs:>12.1f}{ours:>11.1f}{ratio:>8.3f}{extra}")
print(f"every case within 0.97..1.03: {'PASS' if ok else 'MISS'}")
sys.exit(0 if ok else 1)
PY
