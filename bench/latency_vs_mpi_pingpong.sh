#!/usr/bin/env bash
# Side by side, in one invocation: `xferbench latency -t pingpong` (rank 0
# <-> rank 1 over the runtime's blocking send/recv, each round trip timed) and a
# plain MPI_Send/MPI_Recv ping-pong loop (bench/mpi_pingpong_loop.c), 2
# ranks, same sizes, iterations and warm-up; with OSU_DIR (a folder holding
# a built OSU micro-benchmarks; never fetched here) osu_latency runs too.
# Rounds alternate the tools. Figures are one-way us (round trip / 2, as
# osu_latency): xferbench's p50 and the loop's median per round, osu's mean.
# Judged on the median over rounds of the per-round ratio xferbench / loop:
# exits 1 when it is above 1.1 at any size up to 1 KiB.
#
#   bench/latency_vs_mpi_pingpong.sh [XFERBENCH] [ITERS] [ROUNDS] [OSU_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
xb=${1:-$here/../build/default/xferbench}
# The launcher of the MPI xferbench is built with (not the `mpiexec` on PATH,
# which Debian points at whichever MPI has the higher priority).
mpiexec=$("$(dirname "$0")/../scripts/mpi-launcher.sh" "$xb")
iters=${2:-10000}
rounds=${3:-11}  # this VM's latency flips between two states for seconds: use many rounds
osu_dir=${4:-}
warmup=$((iters / 10 + 1))
loop=$(dirname "$xb")/bench/mpi_pingpong_loop
sizes=(8 16 32 64 128 256 512 1024 2048 4096 8192 16384 32768 65536)
[ -x "$xb" ] && [ -x "$loop" ] || { echo "build first (make build)"; exit 2; }
osu=""
osu_range=""
if [ -n "$osu_dir" ]; then
  osu=$(find "$osu_dir" -name osu_latency -type f -perm -u+x 2>/dev/null | head -1)
  [ -n "$osu" ] || { echo "no executable osu_latency under $osu_dir"; exit 2; }
  osu_range=""
  if "$osu" -h 2>&1 | grep -q -- "-m"; then osu_range="-m 8:65536"; fi
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for r in $(seq 1 "$rounds"); do
  "$mpiexec" -n 2 "$xb" latency -t pingpong --backend host -b 8 -e 64K -f 2 -n "$iters" -w "$warmup" \
    --format json -o "$tmp/xb$r.json" -q
  "$mpiexec" -n 2 "$loop" "$iters" "$warmup" "${sizes[@]}" > "$tmp/raw$r.txt"
  if [ -n "$osu" ]; then
    # -m (a size range) came with OSU 5.4; older ones print every size and the parser picks ours
    # shellcheck disable=SC2086
    "$mpiexec" -n 2 "$osu" $osu_range -i "$iters" -x "$warmup" > "$tmp/osu$r.txt"
  fi
done
/usr/bin/python3 - "$tmp" "$rounds" "$iters" "$osu" <<'PY'
import json, statistics, sys
tmp, rounds, iters, osu = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
xb, raw, ratio, osu_us = {}, {}, {}, {}
for r in range(1, rounds + 1):
    mine = {}
    for rec in json.load(open(f"{tmp}/xb{r}.json"))["results"]:
        assert rec["status"] == "ok" and rec["verified"], rec
        t = rec["time_us"]
        assert t["min"] <= t["median"] <= t["p99"] <= t["max"], rec
        mine[rec["bytes"]] = t["median"]
        xb.setdefault(rec["bytes"], []).append(t["median"])
    for line in open(f"{tmp}/raw{r}.txt"):
        d = json.loads(line)
        assert d["ok"], d
        raw.setdefault(d["bytes"], []).append(d["oneway_us_median"])
        ratio.setdefault(d["bytes"], []).append(mine[d["bytes"]] / d["oneway_us_median"])
    if osu:
        for line in open(f"{tmp}/osu{r}.txt"):
            f = line.split()
            if len(f) == 2 and not line.startswith("#"):
                osu_us.setdefault(int(f[0]), []).append(float(f[1]))
print(f"ping-pong rank 0 <-> rank 1, one-way us (round trip / 2), {iters} round trips, "
      f"median of {rounds} rounds")
print("xferbench: p50 of its samples; loop: MPI_Send/MPI_Recv, median of its samples; "
      "ratio: median over rounds of xferbench / loop" + ("; osu_latency: its mean" if osu else ""))
head = f"{'size':>8} {'xferbench':>10} {'loop':>10} {'ratio':>7}"
print(head + (f" {'osu_latency':>12}" if osu else ""))
worst = 0.0
for n in sorted(xb):
    a, b, q = (statistics.median(v[n]) for v in (xb, raw, ratio))
    if n <= 1024:
        worst = max(worst, q)
    line = f"{n:>8} {a:>10.3f} {b:>10.3f} {q:>7.3f}"
    if osu:
        line += f" {statistics.median(osu_us[n]):>12.3f}" if n in osu_us else f" {'-':>12}"
    print(line)
print(f"highest ratio up to 1 KiB: {worst:.3f}  target <= 1.10: {'PASS' if worst <= 1.10 else 'MISS'}")
sys.exit(0 if worst <= 1.10 else 1)
PY
