#!/usr/bin/env bash
# doctor on a busy node: with busy_node.sh's mixed load beside it (3 MPI
# ranks cycling collectives, a compile loop, bursts of a 128 MiB copy), a
# healthy host must never be convicted (exit 0, no FAIL, noise rows naming
# the load), and each fault the throttle knob injects must still be named
# FAIL with exit 1, on the faulty device, direction or pair, by either
# method (in the slower ASan build one method's rows may stay unsettled).
# A fault run in which doctor says it "could not judge" (the load left the
# row unsettled: the honest answer, never a wrong verdict) is run again, at
# most twice.
#   doctor_under_load.sh XFERBENCH [HEALTHY_RUNS]
set -u
XB=$1
RUNS=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
pids=$(mktemp /tmp/xferbench-busy-pids-XXXXXX)
out=$(mktemp)
trap '"$here/busy_node.sh" stop "$pids"; rm -f "$out"' EXIT
BUSY_SECONDS=300 "$here/busy_node.sh" start "$XB" "$pids"
sleep 2  # let the load start

passed=0 failed=0
judge() {  # NAME WANT_RC REGEX RC: the verdict on $out
  local name=$1 want=$2 pattern=$3 rc=$4
  if [ "$rc" -eq "$want" ] && grep -Eq -- "$pattern" "$out" &&
    ! grep -Eq 'Sanitizer|terminate called|Segmentation|Aborted' "$out"; then
    echo "PASS $name (exit $rc)"
    passed=$((passed + 1))
  else
    echo "FAIL $name: exit $rc (want $want), or no line matching /$pattern/"
    sed 's/^/  | /' "$out" | head -60
    failed=$((failed + 1))
  fi
}
check() {  # NAME WANT_RC REGEX [ENV=...] ARGS...
  timeout 120 env "${@:4}" >"$out" 2>&1
  judge "$1" "$2" "$3" $?
}
fault() {  # as check, run again (at most twice) while doctor could not judge
  local attempt rc
  for attempt in 1 2 3; do
    timeout 120 env "${@:4}" >"$out" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] && [ "$attempt" -lt 3 ] && grep -q 'could not judge' "$out" || break
    echo "RERUN $1: doctor could not judge on the busy node (attempt $attempt)"
  done
  judge "$1" "$2" "$3" "$rc"
}

for i in $(seq 1 "$RUNS"); do
  check "healthy_$i" 0 "verdicts: [0-9]+ PASS, [0-9]+ WARN, 0 FAIL" \
    "$XB" doctor --quick --backend host
  grep -E '^noise ' "$out" | head -3
  grep -Eq '^noise .*other processes used [0-9.]+ of [0-9]+ cores' "$out" ||
    { echo "FAIL healthy_$i: the noise rows do not name the load"; failed=$((failed + 1)); }
done
fault slow_device 1 "devices +(h2d|d2h|d2d) device 1 (dma|core) +FAIL .*device 1 is at [0-9]+ % of its peers" \
  XFERBENCH_HOST_DEVICES=2 XFERBENCH_HOST_THROTTLE=1:0.25 "$XB" doctor --quick --backend host --checks devices
fault slow_direction 1 "direction +device 0 (dma|core) +FAIL .*h2d is [0-9]+ % below d2h on device 0" \
  XFERBENCH_HOST_DEVICES=2 XFERBENCH_HOST_THROTTLE=0:0.25:h2d "$XB" doctor --quick --backend host \
  --checks direction
fault slow_pair 1 "pairs +p2p (0->1|1->0) (dma|core) +FAIL .*look at devices (0 and 1|1 and 0)" \
  XFERBENCH_HOST_DEVICES=3 XFERBENCH_HOST_THROTTLE=0-1:0.25 "$XB" doctor --quick --backend host \
  --checks pairs
fault misplaced_buffer 1 "numa +h2d device 0 dma +FAIL .*it is misplaced" \
  XFERBENCH_HOST_DEVICES=1 XFERBENCH_HOST_THROTTLE=host:0.25 "$XB" doctor --quick --backend host \
  --checks numa
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
