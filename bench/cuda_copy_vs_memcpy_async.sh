#!/usr/bin/env bash
# Side by side, in one invocation, on the same sizes: `xferbench copy
# --backend cuda` (dma and core) and a raw cudaMemcpyAsync loop timed with
# events (bench/cuda_memcpy_loop.cu), for h2d, d2h and d2d. Prints GB/s
# (decimal, bytes counted once), the ratio xferbench dma / raw loop (target
# >= 0.95), and d2d dma against half the HBM datasheet figure (a d2d copy
# reads and writes every byte; target >= 85%). Where no GPU is usable it
# says `waived` with the reason and exits 0.
#
#   bench/cuda_copy_vs_memcpy_async.sh [XFERBENCH] [SIZES_MIB] [HBM_GBPS]
#   (defaults: build/default/xferbench, "256 1024", 4800 = H200 HBM3e)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
xb=${1:-$here/../build/default/xferbench}
sizes=${2:-"256 1024"}
hbm=${3:-4800}
loop=$(dirname "$xb")/bench/cuda_memcpy_loop
iters=20
# shellcheck source=bench/cuda_common.sh
. "$here/cuda_common.sh"
[ -x "$loop" ] || { echo "no cuda_memcpy_loop at $loop (build with the CUDA backend)"; exit 2; }

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for mib in $sizes; do
  bytes=$((mib * 1024 * 1024))
  for t in h2d d2h d2d; do
    "$loop" "$t" "$bytes" "$iters" > "$tmp/raw_${t}_$mib.json"
    "$xb" copy --backend cuda -d 0 -t "$t" -s "${mib}M" -w 3 -n "$iters" --method both \
      --format json -o "$tmp/xb_${t}_$mib.json" -q
  done
done

"$py" - "$tmp" "$sizes" "$hbm" <<'PY'
import json, sys
tmp, sizes, hbm = sys.argv[1], sys.argv[2].split(), float(sys.argv[3])
ok = True
print("GB/s (1e9 B/s, bytes counted once), median of the timed iterations")
print(f"{'case':<6}{'MiB':>7}{'raw loop':>11}{'xb dma':>10}{'xb core':>10}{'dma/raw':>10}")
for mib in sizes:
    for t in ("h2d", "d2h", "d2d"):
        raw = json.load(open(f"{tmp}/raw_{t}_{mib}.json"))["gbps_median"]
        recs = json.load(open(f"{tmp}/xb_{t}_{mib}.json"))["results"]
        by = {r["method"]: r for r in recs}
        for r in recs:
            assert r["status"] == "ok" and r["verified"], r
        dma, core = by["dma"]["gbps"]["median"], by["core"]["gbps"]["median"]
        ratio = dma / raw
        ok = ok and ratio >= 0.95
        print(f"{t:<6}{mib:>7}{raw:>11.1f}{dma:>10.1f}{core:>10.1f}{ratio:>10.3f}")
        if t == "d2d":
            share = dma / (hbm / 2)
            print(f"       d2d dma = {100*share:.1f}% of half the HBM figure ({hbm/2:.0f} GB/s); "
                  f"target >= 85%: {'PASS' if share >= 0.85 else 'MISS'}")
print(f"dma/raw target >= 0.95 at every size: {'PASS' if ok else 'MISS'}")
sys.exit(0 if ok else 1)
PY
