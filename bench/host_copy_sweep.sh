#!/usr/bin/env bash
# The host copy engine against a plain multi-threaded memcpy at every size
# (#51): for each of 64 KiB, 1 MiB, 16 MiB, 256 MiB and 1 GiB, in one
# invocation, `xferbench copy -t d2d --method dma --threads T` and
# bench/memcpy_mt with the same T threads, then the same xferbench copy on
# huge pages (`--host-mem huge`, shown beside, not judged: memcpy_mt's pages
# are 4 KiB), and memcpy_mt a second time: the A/A column, memcpy_mt
# against itself, shows how far apart two runs of one tool land on this
# machine (the resolution of the ratio). Rounds alternate the sizes and the
# tools, in orders that change with the round and the size, so drift of the
# machine hits all of them alike; each round is a tool's median iteration.
# Each size is judged on its own: the ratio of the median rounds,
# xferbench / memcpy_mt, against the target 0.97, with the spread of the
# rounds (min..max of the per-round ratios) beside it. Exit 1 when a size
# misses. The last line, "headline: R", is the worst size's ratio (what
# bench/repeat.sh collects).
#
#   bench/host_copy_sweep.sh [XFERBENCH] [ROUNDS] [SIZES_KIB]
#   SIZES_KIB: a space-separated list (default "64 1024 16384 262144 1048576")
#   THREADS=T: both tools' threads (default: nproc)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
xb=${1:-$here/../build/default/xferbench}
rounds=${2:-5}
sizes=${3:-64 1024 16384 262144 1048576}
memcpy_mt=$(dirname "$xb")/bench/memcpy_mt
threads=${THREADS:-$(nproc)}
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
[ -x "$xb" ] || { echo "no xferbench at $xb (make build)"; exit 2; }
[ -x "$memcpy_mt" ] || { echo "no memcpy_mt at $memcpy_mt (make build)"; exit 2; }

# Iterations per size: about 0.5 GB moved per run, 5..20000 iterations.
iters_of() { local n=$(( 512 * 1024 / $1 )); [ "$n" -gt 20000 ] && n=20000; [ "$n" -lt 5 ] && n=5; echo "$n"; }

# One run of one tool at one size, round r.
run_tool() {
  local tool=$1 kib=$2 r=$3 n
  n=$(iters_of "$kib")
  case $tool in
  xb) "$xb" copy --backend host -t d2d -s "${kib}K" --threads "$threads" --method dma -w 3 -n "$n" \
        --format json -o "$tmp/xb_${kib}_$r.json" -q ;;
  mt | mt2) "$memcpy_mt" $((kib * 1024)) "$threads" "$n" >"$tmp/${tool}_${kib}_$r.json" ;;
  huge) "$xb" copy --backend host -t d2d -s "${kib}K" --threads "$threads" --method dma -w 3 \
          -n "$n" --host-mem huge --format json -o "$tmp/huge_${kib}_$r.json" -q || true ;;
  esac
}

# The order of the tools changes with the round and the size, by the rows
# of a balanced Latin square: each tool comes first, and right after each
# other tool (the huge-page run, while the kernel compacts memory, say),
# equally often over four rounds.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
tools=(xb mt huge mt2)
orders=("0 1 3 2" "1 2 0 3" "2 3 1 0" "3 0 2 1")
for r in $(seq 1 "$rounds"); do
  s=0
  for kib in $sizes; do
    for k in ${orders[$(((r + s) % 4))]}; do run_tool "${tools[$k]}" "$kib" "$r"; done
    s=$((s + 1))
  done
done

cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
thp=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo "?")
"$py" - "$tmp" "$rounds" "$threads" "$cpu, $(nproc) CPUs, THP $thp" $sizes <<'PY'
import json, statistics, sys
tmp, rounds, threads, machine, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
print(f"machine: {machine}")
def size_text(kib):
    kib = int(kib)
    return f"{kib // 1048576} GiB" if kib >= 1048576 else f"{kib // 1024} MiB" if kib >= 1024 else f"{kib} KiB"
print(f"d2d copy, {threads} threads, {rounds} interleaved rounds; GB/s (1e9 B/s, bytes once), "
      "each round a tool's median iteration")
print(f"{'size':>8} {'xferbench':>10} {'memcpy_mt':>10} {'ratio':>7} {'rounds':>13} {'A/A':>6} "
      f"{'huge':>8} {'huge/4K':>8}  target 0.97")
worst, missed = float("inf"), []
for kib in sizes:
    xb, mt, mt2, huge, per_round = [], [], [], [], []
    for r in range(1, rounds + 1):
        d = json.load(open(f"{tmp}/xb_{kib}_{r}.json"))["results"][0]
        assert d["status"] == "ok" and d["verified"], d
        m = json.load(open(f"{tmp}/mt_{kib}_{r}.json"))
        xb.append(d["gbps"]["median"]); mt.append(m["gbps_median"])
        mt2.append(json.load(open(f"{tmp}/mt2_{kib}_{r}.json"))["gbps_median"])
        per_round.append(xb[-1] / mt[-1])
        try:
            h = json.load(open(f"{tmp}/huge_{kib}_{r}.json"))["results"][0]
            if h["status"] == "ok": huge.append(h["gbps"]["median"])
        except (OSError, ValueError, KeyError, IndexError):
            pass
    ratio = statistics.median(xb) / statistics.median(mt)
    worst = min(worst, ratio)
    if ratio < 0.97: missed.append(size_text(kib))
    hx = statistics.median(huge) if huge else float("nan")
    print(f"{size_text(kib):>8} {statistics.median(xb):>10.2f} {statistics.median(mt):>10.2f} "
          f"{ratio:>7.3f} {min(per_round):>6.3f}..{max(per_round):<6.3f} "
          f"{statistics.median(mt) / statistics.median(mt2):>6.3f} {hx:>8.2f} "
          f"{hx / statistics.median(xb):>8.3f}  {'PASS' if ratio >= 0.97 else 'MISS'}")
print("A/A: memcpy_mt against itself, run twice in each round: how far apart two runs of one "
      "tool land here")
print("every size at >= 0.97" if not missed else "missed at: " + ", ".join(missed))
print(f"headline: {worst:.3f}")
sys.exit(0 if not missed else 1)
PY
