#!/usr/bin/env bash
# Side by side, in one invocation: `xferbench coll allreduce` (float, sum,
# out of place) and a raw MPI_Allreduce loop (bench/mpi_allreduce_loop.c) on
# the same sizes, ranks and iterations. Prints busbw per size and the ratio;
# exits 1 when xferbench's busbw is below 0.95x the loop's at any size.
# Rounds alternate the two; each side keeps its best round.
#
#   bench/coll_vs_mpi_allreduce.sh [XFERBENCH] [RANKS] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
xb=${1:-$here/../build/default/xferbench}
# The launcher of the MPI xferbench is built with (not the `mpiexec` on PATH,
# which Debian points at whichever MPI has the higher priority).
mpiexec=$("$(dirname "$0")/../scripts/mpi-launcher.sh" "$xb")
ranks=${2:-2}
rounds=${3:-5}
iters=20
warmup=5
loop=$(dirname "$xb")/bench/mpi_allreduce_loop
sizes=(1048576 2097152 4194304 8388608 16777216 33554432 67108864)
[ -x "$xb" ] && [ -x "$loop" ] || { echo "build first (make build)"; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for r in $(seq 1 "$rounds"); do
  "$mpiexec" -n "$ranks" "$xb" coll allreduce -d float --redop sum --outofplace -b 1M -e 64M -f 2 \
    -n "$iters" -w "$warmup" --format json -o "$tmp/xb$r.json" -q
  "$mpiexec" -n "$ranks" "$loop" "$iters" "$warmup" "${sizes[@]}" > "$tmp/raw$r.txt"
done
/usr/bin/python3 - "$tmp" "$rounds" "$ranks" <<'PY'
import json, sys
tmp, rounds, ranks = sys.argv[1], int(sys.argv[2]), sys.argv[3]
xb, xbmean, raw = {}, {}, {}
factor = 2 * (int(ranks) - 1) / int(ranks)
for r in range(1, rounds + 1):
    for rec in json.load(open(f"{tmp}/xb{r}.json"))["results"]:
        assert rec["status"] == "ok" and rec["wrong"] == 0, rec
        xb.setdefault(rec["bytes"], []).append(rec["busbw"])
        xbmean.setdefault(rec["bytes"], []).append(rec["bytes"] / rec["time_us"]["mean"] / 1e3 * factor)
    for line in open(f"{tmp}/raw{r}.txt"):
        d = json.loads(line)
        raw.setdefault(d["bytes"], []).append(d["busbw"])
print(f"allreduce float sum out-of-place, {ranks} ranks, best of {rounds} rounds (busbw GB/s)")
print("xferbench reports each rank's median iteration, max over ranks; the raw loop times the whole")
print("loop (mean), max over ranks. 'xb mean' recomputes xferbench's busbw from its mean, like for like.")
print(f"{'size':>10} {'xferbench':>10} {'xb mean':>10} {'raw loop':>10} {'ratio':>7} {'mean ratio':>11}")
worst = 9.9
for n in sorted(xb):
    a, m, b = max(xb[n]), max(xbmean[n]), max(raw[n])
    worst = min(worst, a / b)
    print(f"{n:>10} {a:>10.3f} {m:>10.3f} {b:>10.3f} {a / b:>7.3f} {m / b:>11.3f}")
print(f"lowest ratio: {worst:.3f}  target >= 0.95: {'PASS' if worst >= 0.95 else 'MISS'}")
sys.exit(0 if worst >= 0.95 else 1)
PY
