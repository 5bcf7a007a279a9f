#!/usr/bin/env bash
# A whole-document -o FILE is never emptied or left half written: it holds
# the previous document until a new whole one replaces it (core/output_file.hpp).
#   keep_output.sh XFERBENCH MPIEXEC SCENARIO
# doctor_stopped   a doctor --full run over a previous doctor file, stopped by
#                  SIGINT after ~1 s: exit 130, the file byte for byte as it was
# gemm_ar_stopped  the same for a 2-rank gemm-ar under the launcher (SIGINT to
#                  mpiexec: every rank stops at its next iteration; hydra's own
#                  exit code may hide the 130, see README) and under --ranks 2
#                  (SIGTERM to xferbench: exit 143 whatever the launcher says)
# doctor_polled    the file polled while a doctor run writes it: never 0 bytes,
#                  and a new document at the end
set -u
xb=$1 mpiexec=$2 scenario=$3
tmp=$(mktemp -d)
trap 'kill -KILL $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL [$scenario]: $*"
  for f in "$tmp"/err "$tmp"/out; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
  exit 1
}
valid_json() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null; }

# bg CMD...: CMD in the background with SIGINT at its default action (a
# script's background job would otherwise ignore it), $pid its pid.
bg() {
  env --default-signal=INT "$@" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
}
# armed PATTERN N: waits (30 s at most) until N processes match PATTERN and
# each catches SIGINT (its stop signals are armed: the run is under way).
armed() {
  local p n ok
  for _ in $(seq 300); do
    n=0 ok=0
    for p in $(pgrep -f "$1"); do
      n=$((n + 1))
      (($(printf '%d' "0x$(awk '/^SigCgt/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)") & 2)) &&
        ok=$((ok + 1))
    done
    [ "$n" -ge "$2" ] && [ "$ok" -ge "$2" ] && return
    sleep 0.1
  done
  fail "the ranks did not arm their stop signals within 30 s ($ok of $n)"
}
unchanged() {  # unchanged FILE: byte for byte the copy taken before, and valid
  cmp -s "$1" "$1.before" || fail "$1 changed: $(wc -c <"$1") bytes, was $(wc -c <"$1.before")"
  valid_json "$1" || fail "$1 is not a JSON document"
}

case $scenario in
  doctor_stopped)
    f=$tmp/doctor.json
    "$xb" doctor --quick --checks latency --backend host --format json -q -o "$f" || [ $? = 1 ] ||
      fail "the first doctor run failed"
    cp "$f" "$f.before"
    bg "$xb" doctor --full --backend host --format json -q -o "$f"
    sleep 1
    kill -0 $pid 2>/dev/null || fail "doctor --full ended within 1 s: nothing to stop"
    kill -INT $pid
    wait $pid
    rc=$?
    [ $rc = 130 ] || fail "exit $rc, expected 130"
    unchanged "$f"
    echo "ok [$scenario]: exit 130, $f as it was"
    ;;
  gemm_ar_stopped)
    f=$tmp/gemm.json
    "$mpiexec" -n 2 "$xb" gemm-ar -M 256 -K 256 -N 256 -n 1 --format json -q -o "$f" ||
      fail "the first gemm-ar run failed"
    cp "$f" "$f.before"
    long=(gemm-ar -M 1024 -K 1024 -N 1024 -n 100000 --format json -q -o "$f")
    bg "$mpiexec" -n 2 "$xb" "${long[@]}"
    armed "^[^ ]*xferbench gemm-ar .*-o $f\$" 2  # the ranks, not mpiexec
    kill -INT $pid
    wait $pid
    rc=$?
    # hydra forwards the signal; each rank stops at its next iteration with 130,
    # but mpiexec may report 0 (README: read stopped_by or the stop line).
    [[ $rc =~ ^(130|0)$ ]] || fail "mpiexec: exit $rc, expected 130 (or hydra's 0)"
    grep -q "stopped by SIGINT before the report; $f keeps what it held" "$tmp/err" ||
      fail "no stop line on stderr"
    unchanged "$f"
    bg "$xb" "${long[@]}" --ranks 2
    armed "^[^ ]*xferbench gemm-ar .*-o $f\$" 2  # the ranks, not this one (--ranks 2 at its end)
    kill -TERM $pid
    wait $pid
    rc2=$?
    [ $rc2 = 143 ] || fail "--ranks 2: exit $rc2, expected 143"
    grep -q "stopped by SIGTERM before the report" "$tmp/err" || fail "--ranks 2: no stop line"
    unchanged "$f"
    echo "ok [$scenario]: mpiexec exit $rc, --ranks 2 exit 143, $f as it was"
    ;;
  doctor_polled)
    f=$tmp/doctor.prom
    "$xb" doctor --quick --checks latency,bandwidth --backend host --format prom -q -o "$f" ||
      [ $? = 1 ] || fail "the first doctor run failed"
    cp "$f" "$f.before"
    sleep 1.1  # a new run_timestamp_seconds
    bg "$xb" doctor --quick --checks latency,bandwidth --backend host --format prom -q -o "$f"
    polls=0
    while kill -0 $pid 2>/dev/null; do
      [ -s "$f" ] || fail "$f was empty while doctor ran (poll $polls)"
      polls=$((polls + 1))
      sleep 0.01
    done
    wait $pid
    rc=$?
    [[ $rc =~ ^(0|1)$ ]] || fail "exit $rc"
    [ -s "$f" ] || fail "$f is empty at the end"
    cmp -s "$f" "$f.before" && fail "$f was not replaced by the new run's document"
    grep -q '^xferbench_doctor_run_timestamp_seconds' "$f" || fail "$f is not doctor's prom document"
    [ "$(find "$tmp" -name '.*.tmp*' | wc -l)" = 0 ] || fail "a temporary file was left beside $f"
    echo "ok [$scenario]: $polls polls, never empty, replaced at the end"
    ;;
  *) fail "unknown scenario" ;;
esac
