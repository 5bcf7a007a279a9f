#!/usr/bin/env bash
# plot, report and compare on real result files of every command.
#   analyze_test.sh XFERBENCH MPIEXEC SCENARIO   (plots | report | doctor_report | fleet_report | compare | bad_input | bad_output | min_bw | v1_files)
set -u
xb=$1; mpiexec=$2; scenario=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL [$scenario]: $*"; cat "$tmp"/*.log 2>/dev/null | tail -40; exit 1; }
skip() { echo "skipped [$scenario]: $*"; exit 77; }  # CTest's SKIP_RETURN_CODE
py=$(command -v /usr/bin/python3 || command -v python3) || skip "no python3 here"
golden=$(cd "$(dirname "$0")/../golden" && pwd)
need_matplotlib() {  # xferbench finds a Python with matplotlib, or says there is none
  "$xb" plot "$golden/v1/copy.json" -o "$tmp/probe.png" 2>"$tmp/probe.err" && return 0
  grep -Eq "needs matplotlib|no python3 found" "$tmp/probe.err" && skip "$(cat "$tmp/probe.err")"
  fail "plot failed: $(cat "$tmp/probe.err")"
}
results() {  # every command's JSON, small
  "$xb" copy -t d2d,h2d -b 4K -e 1M -f 4 -n 3 --format json -o "$tmp/copy.json" -q || fail copy
  XFERBENCH_HOST_DEVICES=3 "$xb" copy -t p2p --bidir -s 1M -n 3 --format json -o "$tmp/p2p.json" -q || fail p2p
  "$mpiexec" -n 2 "$xb" remote -b 4K -e 256K -n 20 --format json -o "$tmp/remote.json" -q || fail remote
  "$mpiexec" -n 2 "$xb" coll allreduce -b 64K -e 1M -n 3 --format json -o "$tmp/coll.json" -q || fail coll
  "$xb" engine selftest -t 4M --block-steps 2 --loops 2 --format json -o "$tmp/engine.json" -q || fail engine
  "$mpiexec" -n 3 "$xb" kv --block-bytes 256K --blocks 4 -n 2 --format json -o "$tmp/kv.json" -q || fail kv
  "$mpiexec" -n 2 "$xb" ep --backend host --method all --tokens 1,8 -n 2 --format json -o "$tmp/ep.json" -q || fail ep
}
in_chromium() {  # in_chromium PAGE: the DOM after its scripts ran, in $tmp/dom.html; the console must be clean
  command -v chromium >/dev/null || skip "no chromium here to open the report in"
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$tmp/profile" --enable-logging=stderr --v=0 \
    --dump-dom "file://$1" >"$tmp/dom.html" 2>"$tmp/chrome.log" || fail "chromium failed"
  grep -E "CONSOLE.*(Uncaught|Error)|Uncaught" "$tmp/chrome.log" && fail "console errors"
}
attr() {  # attr NAME FILE: the value of the first NAME="..." in FILE
  grep -o "$1=\"[^\"]*\"" "$2" | head -1 | cut -d'"' -f2
}
expect2() {  # expect2 PATTERN CMD...
  local pat=$1; shift
  "$@" >"$tmp/out.log" 2>"$tmp/err.log"; local rc=$?
  [ $rc -eq 2 ] || fail "exit $rc, expected 2: $*"
  [ "$(wc -l <"$tmp/err.log")" -eq 1 ] || fail "expected one stderr line: $(cat "$tmp/err.log")"
  grep -Eq -- "$pat" "$tmp/err.log" || fail "stderr does not match /$pat/: $(cat "$tmp/err.log")"
}
case $scenario in
plots)
  need_matplotlib
  results
  for f in copy p2p remote coll engine kv ep; do
    "$xb" plot "$tmp/$f.json" -o "$tmp/$f.png" 2>"$tmp/plot_$f.log" || fail "plot $f"
    size=$(stat -c %s "$tmp/$f.png")
    [ "$size" -gt 10000 ] || fail "$f.png is only $size bytes"
    [ "$(head -c 8 "$tmp/$f.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] || fail "$f.png is not a PNG"
    [ -s "$tmp/plot_$f.log" ] && fail "matplotlib printed on stderr for $f"
  done
  "$xb" plot "$tmp/coll.json" -o "$tmp/coll.svg" || fail "svg"
  # --threads list: a bandwidth-vs-threads chart
  "$xb" copy -t d2d --method core --threads 1,2 -s 1M -n 2 --backend host --format json -o "$tmp/thr.json" -q ||
    fail "copy --threads"
  "$xb" plot "$tmp/thr.json" -o "$tmp/thr.svg" || fail "plot --threads"
  grep -q "bandwidth vs cores / thread blocks" "$tmp/thr.svg" || fail "no threads chart"
  grep -q "<svg" "$tmp/coll.svg" || fail "not an SVG"
  # ep: the token ladder, a panel per phase, fresh and chained curves for both methods
  "$xb" plot "$tmp/ep.json" -o "$tmp/ep.svg" || fail "plot ep svg"
  grep -q "ep: time vs tokens per rank" "$tmp/ep.svg" || fail "no ep chart"
  [ "$(grep -c '<g id="axes_' "$tmp/ep.svg")" = 3 ] || fail "ep: expected 3 panels"
  for c in "<!-- dispatch -->" "<!-- combine -->" "<!-- roundtrip -->" "alltoallv (mpi) fresh" "put (mpi) chained"; do
    grep -qF "$c" "$tmp/ep.svg" || fail "ep chart: no '$c'"
  done
  ;;
report)
  need_matplotlib
  command -v chromium >/dev/null || skip "no chromium here to open the report in"
  results
  "$xb" report "$tmp"/copy.json "$tmp"/p2p.json "$tmp"/remote.json "$tmp"/coll.json "$tmp"/engine.json \
    "$tmp"/kv.json "$tmp"/ep.json -o "$tmp/report.html" || fail "report"
  grep -q "<figcaption>EP dispatch/combine</figcaption>" "$tmp/report.html" || fail "no ep chart"
  grep -q "https\?://" "$tmp/report.html" && grep -Eq "(src|href)=\"https?://" "$tmp/report.html" && fail "network reference"
  expected=$(grep -o 'data-expected-charts="[0-9]*"' "$tmp/report.html" | grep -o '[0-9]*')
  [ "$expected" -ge 8 ] || fail "only $expected charts"
  in_chromium "$tmp/report.html"
  shown=$(grep -o 'data-charts="[0-9]*"' "$tmp/dom.html" | grep -o '[0-9]*')
  [ "$shown" = "$expected" ] || fail "chromium shows ${shown:-no} charts of $expected"
  [ "$(attr data-verdicts-first "$tmp/dom.html")" = none ] || fail "a verdict table without a doctor file"
  ;;
fleet_report)
  # fleet's page: its verdicts first (slow host named), then the heatmaps of the pair matrix.
  need_matplotlib
  command -v chromium >/dev/null || skip "no chromium here to open the report in"
  XFERBENCH_HOST_THROTTLE=rank3:0.05 "$mpiexec" -n 5 "$xb" fleet --backend host -s 2M -n 3 --pings 20 \
    --passes 2 --concurrency 1 --threshold 0.25 --no-census --format json -o "$tmp/fleet.json" -q >"$tmp/fleet.log" 2>&1
  rc=$?
  [ $rc -eq 1 ] && [ -s "$tmp/fleet.json" ] || fail "fleet: exit $rc, expected 1 (rank 3 throttled)"
  "$xb" report "$tmp/fleet.json" -o "$tmp/report.html" 2>"$tmp/report.log" || fail "report"
  [ -s "$tmp/report.log" ] && fail "report printed on stderr"
  rows=$("$py" -c 'import json,sys; print(sum(r["case"] in ("fleet","census","host","link","latency") for r in json.load(open(sys.argv[1]))["results"]))' "$tmp/fleet.json")
  [ "$(attr data-expected-verdict-rows "$tmp/report.html")" = "$rows" ] || fail "expected $rows verdict rows"
  grep -q "slow_hosts: [^ <]*#3" "$tmp/report.html" || fail "the page does not name the slow host"
  for c in "fleet: send GB/s, row to column" "fleet: one-way latency" "fleet: send CV"; do
    grep -q "<figcaption>$c</figcaption>" "$tmp/report.html" || fail "no heatmap '$c'"
  done
  expected=$(attr data-expected-charts "$tmp/report.html")
  in_chromium "$tmp/report.html"
  [ "$(attr data-charts "$tmp/dom.html")" = "$expected" ] || fail "chromium shows $(attr data-charts "$tmp/dom.html") charts of $expected"
  [ "$(attr data-verdict-rows "$tmp/dom.html")" = "$rows" ] || fail "chromium shows $(attr data-verdict-rows "$tmp/dom.html") verdict rows of $rows"
  [ "$(attr data-verdicts-first "$tmp/dom.html")" = yes ] || fail "in chromium the verdict table is not before the first chart"
  ;;
doctor_report)
  # doctor's verdicts open the report: the table comes before the first chart, whatever the file order.
  need_matplotlib
  command -v chromium >/dev/null || skip "no chromium here to open the report in"
  "$xb" doctor --quick --backend host --format json -o "$tmp/doctor.json" -q >"$tmp/doctor.log" 2>&1
  rc=$?  # 1: a check failed on this machine; the report shows it all the same
  [ $rc -le 1 ] && [ -s "$tmp/doctor.json" ] || fail "doctor: exit $rc"
  "$xb" copy -t d2d,h2d -b 4K -e 1M -f 4 -n 3 --backend host --format json -o "$tmp/copy.json" -q || fail copy
  "$xb" report "$tmp/copy.json" "$tmp/doctor.json" -o "$tmp/report.html" 2>"$tmp/report.log" || fail "report"
  [ -s "$tmp/report.log" ] && fail "report printed on stderr"
  grep -Eq "(src|href)=\"https?://" "$tmp/report.html" && fail "network reference"
  # What the page must say, from the doctor file itself.
  "$py" - "$tmp/doctor.json" >"$tmp/want.txt" <<'PY' || fail "doctor.json unreadable"
import html, json, sys
res = json.load(open(sys.argv[1]))["results"]
n = {v: sum(r["verdict"] == v for r in res) for v in ("PASS", "WARN", "FAIL")}
print(len(res))
print(f"{n['PASS']} PASS, {n['WARN']} WARN, {n['FAIL']} FAIL")
for r in res:
    if r["case"] == "bandwidth" and r["expected"] > 0:
        print(html.escape(f"{r['method']}: {100 * r['ratio']:.0f} %"))
PY
  rows=$(sed -n 1p "$tmp/want.txt"); count=$(sed -n 2p "$tmp/want.txt")
  [ "$(attr data-expected-verdict-rows "$tmp/report.html")" = "$rows" ] || fail "expected $rows verdict rows"
  grep -q "class=\"verdict-count[^\"]*\">$count" "$tmp/report.html" || fail "no count line '$count'"
  tail -n +3 "$tmp/want.txt" | while read -r line; do
    grep -qF "$line" "$tmp/report.html" || { echo "no headline figure '$line'"; exit 1; }
  done || fail "headline figures"
  for v in PASS WARN FAIL; do
    want=$(grep -o "[0-9]* $v" <<<"$count" | cut -d' ' -f1)
    got=$(grep -o "class=\"verdict v-${v,,}\">$v<" "$tmp/report.html" | wc -l)
    [ "$got" = "$want" ] || fail "$got $v cells coloured, expected $want"
  done
  table=$(grep -bo '<table class="verdicts"' "$tmp/report.html" | head -1 | cut -d: -f1)
  chart=$(grep -bo '<figure class="chart"' "$tmp/report.html" | head -1 | cut -d: -f1)
  [ -n "$table" ] && [ -n "$chart" ] || fail "no verdict table ($table) or no chart ($chart)"
  [ "$table" -lt "$chart" ] || fail "the verdict table (byte $table) comes after the first chart (byte $chart)"
  grep -q "<figcaption>Doctor verdicts</figcaption>" "$tmp/report.html" || fail "no doctor chart"
  expected=$(attr data-expected-charts "$tmp/report.html")
  [ "$expected" -ge 2 ] || fail "only $expected charts"
  in_chromium "$tmp/report.html"
  [ "$(attr data-charts "$tmp/dom.html")" = "$expected" ] || fail "chromium shows $(attr data-charts "$tmp/dom.html") charts of $expected"
  [ "$(attr data-verdict-rows "$tmp/dom.html")" = "$rows" ] || fail "chromium shows $(attr data-verdict-rows "$tmp/dom.html") verdict rows of $rows"
  [ "$(attr data-verdicts-first "$tmp/dom.html")" = yes ] || fail "in chromium the verdict table is not before the first chart"
  # doctor plots on its own too, and copy's bandwidth chart has one panel per case.
  "$xb" plot "$tmp/doctor.json" -o "$tmp/doctor.png" 2>"$tmp/plot_doctor.log" || fail "plot doctor"
  [ "$(head -c 8 "$tmp/doctor.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] || fail "doctor.png is not a PNG"
  [ -s "$tmp/plot_doctor.log" ] && fail "matplotlib printed on stderr for doctor"
  "$xb" plot "$tmp/copy.json" -o "$tmp/copy.svg" || fail "plot copy svg"
  [ "$(grep -c '<g id="axes_' "$tmp/copy.svg")" = 2 ] || fail "copy d2d,h2d: expected 2 panels"
  grep -q "<!-- h2d -->" "$tmp/copy.svg" && grep -q "<!-- d2d -->" "$tmp/copy.svg" || fail "no h2d and d2d panels"
  ;;
compare)
  "$xb" copy -t d2d -b 64K -e 1M -f 4 -n 3 --method dma --format json -o "$tmp/base.json" -q || fail copy
  "$xb" compare "$tmp/base.json" "$tmp/base.json" >"$tmp/same.log" || fail "identical files compared as a regression"
  grep -q "0 regressions" "$tmp/same.log" || fail "identical: $(cat "$tmp/same.log")"
  "$py" - "$tmp/base.json" "$tmp/new.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["results"][1]["gbps"]["median"] *= 0.9   # a 10% drop in one record
d["results"].append(dict(d["results"][0], bytes=12345))  # a record only the new file has
json.dump(d, open(sys.argv[2], "w"))
PY
  "$xb" compare "$tmp/base.json" "$tmp/new.json" --threshold 5% >"$tmp/drop.log"; rc=$?
  [ $rc -eq 1 ] || fail "a 10% drop: exit $rc, expected 1"
  [ "$(grep -c REGRESSION "$tmp/drop.log")" -eq 1 ] || fail "expected one regression: $(cat "$tmp/drop.log")"
  grep -q "only in the new file" "$tmp/drop.log" || fail "unmatched record not listed"
  "$xb" compare "$tmp/base.json" "$tmp/new.json" --threshold 15% >/dev/null || fail "10% drop flagged at 15%"
  # Wrong data at the same speed (--check every): compared, and a regression of its own.
  "$xb" copy --backend host -t d2d -s 64K -n 50 --method dma --check every --format json \
    -o "$tmp/every.json" -q ||
    fail "copy --check every"
  "$py" - "$tmp/every.json" "$tmp/wrong.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"][0]
r.update(status="failed", verified=False, wrong_iters=3, reason="wrong data: 3 of 50")
json.dump(d, open(sys.argv[2], "w"))
PY
  "$xb" compare "$tmp/every.json" "$tmp/wrong.json" >"$tmp/wrong.log"; rc=$?
  [ $rc -eq 1 ] || fail "wrong data: exit $rc, expected 1: $(cat "$tmp/wrong.log")"
  grep -q "WRONG DATA 0/50 -> 3/50" "$tmp/wrong.log" || fail "no WRONG DATA row: $(cat "$tmp/wrong.log")"
  grep -q "1 matched, 1 regression" "$tmp/wrong.log" || fail "not counted: $(cat "$tmp/wrong.log")"
  "$xb" compare "$tmp/wrong.json" "$tmp/every.json" >"$tmp/right.log" || fail "now right: a regression"
  grep -q "(now right)" "$tmp/right.log" || fail "now right not said: $(cat "$tmp/right.log")"
  ;;
bad_input)
  echo "not json" >"$tmp/bad.json"
  echo '{"schema":"other/2","results":[{}]}' >"$tmp/other.json"
  echo '{"schema":"xferbench/1","command":"copy","results":[]}' >"$tmp/empty.json"
  "$xb" copy -t d2d -s 4K -n 2 --format json -o "$tmp/good.json" -q
  # @F@ stands for the file under test (mktemp names may contain any letter).
  for cmd in "plot @F@ -o $tmp/x.png" "report @F@ -o $tmp/x.html" "compare @F@ $tmp/good.json" \
             "compare $tmp/good.json @F@"; do
    expect2 "is not a JSON document" $xb ${cmd//@F@/$tmp/bad.json}
    expect2 "has schema \"other/2\" but this xferbench reads xferbench/1" $xb ${cmd//@F@/$tmp/other.json}
    expect2 "has no results" $xb ${cmd//@F@/$tmp/empty.json}
    expect2 "cannot read $tmp/missing.json" $xb ${cmd//@F@/$tmp/missing.json}
  done
  expect2 "--threshold 'lots' must be like 5%" "$xb" compare "$tmp/good.json" "$tmp/good.json" --threshold lots
  expect2 "-o must end in .png or .svg" "$xb" plot "$tmp/good.json" -o "$tmp/x.gif"
  ;;
bad_output)
  # -o is checked before Python runs (one line, exit 2), and may not be an input; a write
  # that fails anyway (/dev/full) is one line from the script, exit 1, no traceback.
  "$xb" copy -t d2d -s 4K -n 2 --format json -o "$tmp/good.json" -q
  cp "$tmp/good.json" "$tmp/good.before"
  expect2 "cannot write -o $tmp/missing/out.png: No such file or directory" \
    "$xb" plot "$tmp/good.json" -o "$tmp/missing/out.png"
  expect2 "cannot write -o $tmp/missing/r.html: No such file or directory" \
    "$xb" report "$tmp/good.json" -o "$tmp/missing/r.html"
  expect2 "cannot write -o $tmp: Is a directory" "$xb" report "$tmp/good.json" -o "$tmp"
  expect2 "-o $tmp/good.json is the input $tmp/good.json: it would be overwritten" \
    "$xb" report "$tmp/good.json" -o "$tmp/good.json"
  ln "$tmp/good.json" "$tmp/same.json"  # another name, the same file
  expect2 "-o $tmp/same.json is the input $tmp/good.json" \
    "$xb" report "$tmp/good.json" -o "$tmp/same.json"
  cmp -s "$tmp/good.json" "$tmp/good.before" || fail "report overwrote its input"
  if "$xb" plot "$tmp/good.json" -o "$tmp/probe.png" 2>"$tmp/probe.err"; then
    ln -s /dev/full "$tmp/full.png"  # plot takes only .png or .svg names
    for cmd in "plot $tmp/good.json -o $tmp/full.png" "report $tmp/good.json -o /dev/full"; do
      $xb $cmd >"$tmp/out.log" 2>"$tmp/err.log"; rc=$?
      [ $rc -eq 1 ] || fail "exit $rc, expected 1: $cmd"
      [ "$(wc -l <"$tmp/err.log")" -eq 1 ] || fail "expected one stderr line: $(cat "$tmp/err.log")"
      grep -q "cannot write .*No space left on device" "$tmp/err.log" || fail "$(cat "$tmp/err.log")"
    done
    echo "ok [$scenario]: up-front checks, and /dev/full in one line"
  else
    echo "ok [$scenario]: up-front checks; the /dev/full write not tried: $(cat "$tmp/probe.err")"
  fi
  ;;
min_bw)
  "$xb" copy -t d2d -s 64K -n 3 --min-bw 1000000 -q >/dev/null 2>"$tmp/err.log"; rc=$?
  [ $rc -eq 1 ] || fail "--min-bw above every record: exit $rc"
  grep -q "below --min-bw 1e+06 GB/s" "$tmp/err.log" || fail "message: $(cat "$tmp/err.log")"
  "$xb" copy -t d2d -s 64K -n 3 --min-bw 0.000001 -q >/dev/null || fail "--min-bw below every record failed"
  "$mpiexec" -n 2 "$xb" coll allreduce -s 64K -n 2 --min-bw 1000000 >/dev/null 2>&1 && fail "coll --min-bw"
  ;;
v1_files)
  # Files written by the build before the family redesign (tests/golden/v1, one per family):
  # they still load, plot and report, and match today's records key for key.
  need_matplotlib
  v1=$golden/v1
  for f in copy remote coll engine kv gemm-ar; do
    ok=$("$py" -c 'import json,sys; print(sum(r["status"]=="ok" for r in json.load(open(sys.argv[1]))["results"]))' "$v1/$f.json")
    "$xb" compare "$v1/$f.json" "$v1/$f.json" >"$tmp/self_$f.log" || fail "compare $f with itself"
    grep -q "^$ok matched, 0 regressions past 5.0%, 0 unmatched" "$tmp/self_$f.log" ||
      fail "$f: expected $ok matched: $(tail -1 "$tmp/self_$f.log")"
    "$xb" plot "$v1/$f.json" -o "$tmp/$f.png" 2>"$tmp/plot_$f.log" || fail "plot $f"
    [ "$(head -c 8 "$tmp/$f.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] || fail "$f.png is not a PNG"
  done
  "$xb" report "$v1"/*.json -o "$tmp/report.html" || fail "report of the v1 files"
  grep -q 'data-expected-charts="[1-9]' "$tmp/report.html" || fail "report has no charts"
  # The same runs today (on the host, as the old files were): every record finds its partner.
  "$xb" copy -t d2d,h2d -b 4K -e 64K -f 4 -n 3 --format json -o "$tmp/copy.json" --backend host -q || fail copy
  "$mpiexec" -n 2 "$xb" remote -b 4K -e 16K -n 20 --format json -o "$tmp/remote.json" --backend host -q || fail remote
  "$mpiexec" -n 2 "$xb" coll allreduce -b 1K -e 16K -f 4 -n 5 -w 1 --format json -o "$tmp/coll.json" --backend host -q || fail coll
  "$xb" engine selftest -t 1M --block-steps 2 --loops 2 --format json -o "$tmp/engine.json" --backend host -q || fail engine
  "$mpiexec" -n 2 "$xb" kv --block-bytes 64K --blocks 2,4 -n 2 --format json -o "$tmp/kv.json" --backend host -q || fail kv
  "$mpiexec" -n 2 "$xb" gemm-ar -M 256 -K 256 -N 256 -n 2 --format json -o "$tmp/gemm-ar.json" --backend host -q || fail gemm-ar
  for f in copy remote coll engine kv gemm-ar; do
    "$xb" compare "$v1/$f.json" "$tmp/$f.json" --threshold 99% >"$tmp/cross_$f.log"
    grep -q " 0 unmatched$" "$tmp/cross_$f.log" || fail "$f: old and new records differ: $(cat "$tmp/cross_$f.log")"
  done
  ;;
*) fail "unknown scenario" ;;
esac
echo "ok: $scenario"
