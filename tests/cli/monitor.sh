#!/usr/bin/env bash
# Monitoring runs (--duration, --cycles): monitor.sh XFERBENCH MPIEXEC SOURCE_DIR
# - copy for 3 s as jsonl: several cycles, t_unix increasing, cycle 0..N-1;
# - the plot script draws it against time;
# - compare judges each cycle against a baseline (one row per cycle);
# - coll, remote and kv --cycles 2 under mpiexec: both cycles' records on rank 0's file;
# - Ctrl-C of --cycles 0 ends it as a stopped run (exit 130, records kept).
set -u
xb=$1 mpiexec=$2 src=$3
tmp=$(mktemp -d)
trap 'kill -KILL $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
py=/usr/bin/python3

"$xb" copy --backend host -t d2d -s 16M -n 20 --duration 3s --format jsonl -o "$tmp/m.jsonl" -q ||
  fail "copy --duration exited $?"
$py - "$tmp/m.jsonl" <<'EOF' || fail "the cycles of m.jsonl"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
recs = [l for l in lines[1:] if "summary" not in l]
cycles = [r["cycle"] for r in recs]
t = [r["t_unix"] for r in recs]
assert len(set(cycles)) >= 2, f"cycles {cycles}"
assert cycles == sorted(cycles) and cycles[0] == 0, f"cycles {cycles}"
assert all(b > a for a, b in zip(t, t[1:])), "t_unix not increasing"
assert "summary" in lines[-1]
print(f"{len(set(cycles))} cycles, {len(recs)} records over {t[-1] - t[0]:.1f} s")
EOF
"$xb" copy --backend host -t d2d -s 16M -n 20 --cycles 2 | grep -Eq '^ +1 +[0-9.]+  d2d dma 0->0 16 MiB' ||
  fail "the table has no line for cycle 1"

# The plot script's chart for it is figures against time.
MPLBACKEND=Agg $py - "$src/scripts" "$tmp/m.jsonl" <<'EOF' || fail "plot of a monitoring file"
import json, sys
sys.path.insert(0, sys.argv[1])
try:
    import xferbench_plot as p
except SystemExit:
    print("no matplotlib: chart not checked"); sys.exit(0)
lines = [json.loads(l) for l in open(sys.argv[2])]
doc = dict(lines[0]); doc["results"] = [l for l in lines[1:] if "summary" not in l]
title = p.charts(doc)[0][0]
assert title.endswith("over time"), title
print("chart:", title)
EOF
if "$xb" plot "$tmp/m.jsonl" -o "$tmp/m.png" 2>"$tmp/plot.err"; then
  [ -s "$tmp/m.png" ] || fail "plot wrote nothing"
elif ! grep -Eq "needs matplotlib|no python3 found" "$tmp/plot.err"; then
  fail "plot: $(cat "$tmp/plot.err")"
fi

"$xb" copy --backend host -t d2d -s 16M -n 20 --format json -o "$tmp/base.json" -q || fail "baseline"
"$xb" compare "$tmp/base.json" "$tmp/m.jsonl" --threshold 99% >"$tmp/cmp" || fail "compare exited $?"
grep -q "cycle=1" "$tmp/cmp" || fail "compare has no row for cycle 1: $(cat "$tmp/cmp")"

"$mpiexec" -n 2 "$xb" coll allreduce --backend host -b 4K -e 64K -f 4 -n 3 --cycles 2 \
  --format json -o "$tmp/c.json" -q || fail "coll --cycles 2 exited $?"
$py -c "
import json, sys
r = json.load(open('$tmp/c.json'))['results']
c = sorted({x['cycle'] for x in r})
sys.exit(0 if c == [0, 1] and len(r) == 2 * len([x for x in r if x['cycle'] == 0]) else 1)" ||
  fail "coll --cycles 2: $(grep -c '"cycle"' "$tmp/c.json") records with a cycle"

# remote and kv: each cycle's records, with their cycle, on rank 0's file.
for cmd in "remote --backend host -s 64K -n 5" "kv --blocks 4 --block-bytes 64K -n 3"; do
  # shellcheck disable=SC2086
  "$mpiexec" -n 2 "$xb" $cmd --cycles 2 --format json -o "$tmp/x.json" -q || fail "$cmd --cycles 2 exited $?"
  $py -c "
import json, sys
r = json.load(open('$tmp/x.json'))['results']
sys.exit(0 if sorted({x['cycle'] for x in r}) == [0, 1] and all('t_unix' in x for x in r) else 1)" ||
    fail "$cmd --cycles 2: the records do not carry both cycles"
done

"$xb" copy --backend host -t d2d -s 16M -n 20 --cycles 0 --format jsonl -o "$tmp/f.jsonl" -q \
  2>"$tmp/f.err" &
pid=$!
for _ in $(seq 100); do
  n=$(grep -c '"cycle":1' "$tmp/f.jsonl" 2>/dev/null)
  [ "${n:-0}" -ge 1 ] && break
  sleep 0.1
done
kill -INT $pid
wait $pid
rc=$?
[ "$rc" -eq 130 ] || fail "--cycles 0 stopped by SIGINT exited $rc"
grep -q '"interrupted":true' "$tmp/f.jsonl" || fail "--cycles 0 not marked interrupted"
echo "ok: monitoring runs"
