#!/usr/bin/env bash
# Side by side, in one invocation: `xferbench remote` (get, dma method over
# MPI RMA windows = MPI_Rget + flush per transfer) and a minimal raw MPI_Get +
# flush loop (bench/mpi_get_loop.c), 2 ranks, same sizes and iterations.
# Prints GB/s per size and the ratio. Rounds alternate the two tools.
#
#   bench/remote_vs_mpi_get.sh [XFERBENCH] [ITERS] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
xb=${1:-$here/../build/default/xferbench}
# The launcher of the MPI xferbench is built with (not the `mpiexec` on PATH,
# which Debian points at whichever MPI has the higher priority).
mpiexec=$("$(dirname "$0")/../scripts/mpi-launcher.sh" "$xb")
iters=${2:-200}
rounds=${3:-5}
loop=$(dirname "$xb")/bench/mpi_get_loop
sizes=(4096 16384 65536 262144 1048576 4194304)
[ -x "$xb" ] && [ -x "$loop" ] || { echo "build first (make build)"; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for r in $(seq 1 "$rounds"); do
  "$mpiexec" -n 2 "$xb" remote --transport rma --method dma --op get -b 4K -e 4M -f 4 \
    -n "$iters" -w $((iters / 10 + 1)) --format json -o "$tmp/xb$r.json" -q
  "$mpiexec" -n 2 "$loop" "$iters" "${sizes[@]}" > "$tmp/raw$r.txt"
done
/usr/bin/python3 - "$tmp" "$rounds" <<'PY'
import json, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
xb, raw = {}, {}
for r in range(1, rounds + 1):
    for rec in json.load(open(f"{tmp}/xb{r}.json"))["results"]:
        assert rec["status"] == "ok" and rec["verified"], rec
        xb.setdefault(rec["bytes"], []).append(rec["gbps"]["median"])
    for line in open(f"{tmp}/raw{r}.txt"):
        d = json.loads(line)
        assert d["ok"], d
        raw.setdefault(d["bytes"], []).append(d["gbps_median"])
print(f"remote get over MPI RMA, 2 ranks, best of {rounds} rounds (median GB/s per round, 1e9 B/s)")
print(f"{'size':>10} {'xferbench dma':>14} {'raw MPI_Get':>12} {'ratio':>7}")
ratios = []
for n in sorted(xb):
    a, b = max(xb[n]), max(raw[n])
    ratios.append(a / b)
    print(f"{n:>10} {a:>14.3f} {b:>12.3f} {a / b:>7.3f}")
print(f"geometric mean ratio: {__import__('math').prod(ratios) ** (1 / len(ratios)):.3f}")
PY
