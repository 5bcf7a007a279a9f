#!/usr/bin/env bash
# Side by side, in one invocation, on the same size: `xferbench copy -t d2d`
# (dma engine, --threads = cores), a plain multi-threaded memcpy loop
# (bench/memcpy_mt.cpp), single-threaded mbw (Debian package), and
# `xferbench copy -t d2d --host-mem huge` (the same on huge pages, shown
# beside, not judged: memcpy_mt's pages are 4 KiB). Prints GB/s (decimal,
# bytes counted once) and the ratios. Rounds alternate the tools so drift of
# the machine hits all of them alike. The headline is the ratio of the
# median rounds (each round is a tool's median iteration); the target is
# >= 0.97, and the exit status is 1 when it is missed. The last line,
# "headline: R", is what bench/repeat.sh collects.
#
#   bench/host_copy_vs_memcpy.sh [XFERBENCH] [SIZE_MIB] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
xb=${1:-$here/../build/default/xferbench}
mib=${2:-256}
rounds=${3:-7}
memcpy_mt=$(dirname "$xb")/bench/memcpy_mt
threads=$(nproc)
bytes=$((mib * 1024 * 1024))
iters=30
py=/usr/bin/python3
[ -x "$xb" ] || { echo "no xferbench at $xb (make build)"; exit 2; }
[ -x "$memcpy_mt" ] || { echo "no memcpy_mt at $memcpy_mt (make build)"; exit 2; }
command -v mbw >/dev/null || { echo "mbw missing (scripts/install-deps.sh installs it)"; exit 2; }

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for r in $(seq 1 "$rounds"); do
  "$xb" copy -t d2d -s "${mib}M" --threads "$threads" --method dma -w 2 -n "$iters" \
     --format json -o "$tmp/xb$r.json" -q
  "$memcpy_mt" "$bytes" "$threads" "$iters" > "$tmp/mt$r.json"
  mbw -q -n "$iters" -t0 "$mib" | grep '^AVG' > "$tmp/mbw$r.txt" || true
  "$xb" copy -t d2d -s "${mib}M" --threads "$threads" --method dma -w 2 -n "$iters" \
     --host-mem huge --format json -o "$tmp/huge$r.json" -q || true
done

"$py" - "$tmp" "$rounds" "$mib" "$threads" <<'PY'
import json, re, sys, statistics
tmp, rounds, mib, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
xb_med, xb_max, mt_med, mt_max, mbw, huge, huge_note = [], [], [], [], [], [], ""
for r in range(1, rounds + 1):
    d = json.load(open(f"{tmp}/xb{r}.json"))["results"][0]
    assert d["status"] == "ok" and d["verified"], d
    xb_med.append(d["gbps"]["median"]); xb_max.append(d["gbps"]["max"])
    m = json.load(open(f"{tmp}/mt{r}.json"))
    mt_med.append(m["gbps_median"]); mt_max.append(m["gbps_max"])
    t = open(f"{tmp}/mbw{r}.txt").read()
    g = re.search(r"Copy:\s*([\d.]+)\s*MiB/s", t)
    if g: mbw.append(float(g.group(1)) * 1048576 / 1e9)
    try:
        h = json.load(open(f"{tmp}/huge{r}.json"))
        if h["results"][0]["status"] == "ok":
            huge.append(h["results"][0]["gbps"]["median"])
        huge_note = dict(h.get("summary", {})).get("host_pages", "") or h["results"][0].get("reason", "")
    except (OSError, ValueError, KeyError, IndexError):
        pass
best = lambda v: max(v) if v else float("nan")
mid = lambda v: statistics.median(v) if v else float("nan")
print(f"d2d copy of {mib} MiB, {threads} threads, {rounds} interleaved rounds (GB/s, 1e9 B/s, bytes once)")
print("per round each tool reports the median of its timed iterations; shown: median and best round")
print(f"{'tool':<38}{'median':>10}{'best':>10}{'peak iter':>11}")
print(f"{'xferbench copy -t d2d (dma)':<38}{mid(xb_med):>10.2f}{best(xb_med):>10.2f}{best(xb_max):>11.2f}")
print(f"{'memcpy_mt (plain, same threads)':<38}{mid(mt_med):>10.2f}{best(mt_med):>10.2f}{best(mt_max):>11.2f}")
print(f"{'mbw -t0 (1 thread, avg)':<38}{mid(mbw):>10.2f}{best(mbw):>10.2f}")
print(f"{'xferbench ... --host-mem huge':<38}{mid(huge):>10.2f}{best(huge):>10.2f}   {huge_note}")
ratio = mid(xb_med) / mid(mt_med)
print(f"ratio xferbench/memcpy_mt, best rounds: {best(xb_med) / best(mt_med):.3f}")
if huge: print(f"ratio huge pages/4 KiB pages (xferbench, median rounds): {mid(huge) / mid(xb_med):.3f}")
print(f"ratio xferbench/memcpy_mt, median rounds: {ratio:.3f}  target >= 0.97: {'PASS' if ratio >= 0.97 else 'MISS'}")
print(f"headline: {ratio:.3f}")
sys.exit(0 if ratio >= 0.97 else 1)
PY
