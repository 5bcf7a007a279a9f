#!/usr/bin/env bash
# A device that stops answering (CTest label `gpu`; CUDA review N1): the
# test seam XFERBENCH_TEST_STALL queues a kernel that spins for ten minutes
# before the work, and XFERBENCH_DEVICE_TIMEOUT=3 must end the wait at 3 s:
# one line on stderr at once, exit 1 within the deadline and a teardown,
# never a hang.
#   copy: the measurement in flight is a `failed` record in -o, saying why.
#   nccl: the collective's wait ends, its communicator aborted; the run
#         ends with the error and keeps the records so far.
# usage: stall.sh XFERBENCH MPIEXEC copy|nccl
xb=$1 mpiexec=$2 kind=$3
. "$(dirname "$0")/need_gpu.sh"
need_gpu "$xb"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/err" 2>/dev/null; exit 1; }
start=$SECONDS
case $kind in
copy)
  XFERBENCH_DEVICE_TIMEOUT=3 XFERBENCH_TEST_STALL=copy timeout -k 10 60 "$xb" copy --backend cuda \
    -t d2d -b 1M -e 2M -f 2 -n 2 -w 0 --format json -q -o "$tmp/out.json" 2>"$tmp/err"
  rc=$?
  ;;
nccl)
  XFERBENCH_DEVICE_TIMEOUT=3 XFERBENCH_TEST_STALL=nccl timeout -k 10 60 "$mpiexec" -n 1 "$xb" coll \
    allreduce --backend cuda -s 1M -n 2 -w 0 --format json -q -o "$tmp/out.json" 2>"$tmp/err"
  rc=$?
  ;;
*) fail "unknown kind $kind" ;;
esac
took=$((SECONDS - start))
echo "exit $rc after ${took}s"
[ $rc -eq 1 ] || fail "exit $rc, expected 1 (124: it hung)"
[ $took -le 40 ] || fail "took ${took}s: the deadline is 3 s"
grep -q "did not finish within 3 s (XFERBENCH_DEVICE_TIMEOUT)" "$tmp/err" || fail "no deadline line on stderr"
if [ "$kind" = copy ]; then
  /usr/bin/python3 - "$tmp/out.json" <<'PY' || fail "-o lacks the failed record"
import json, sys
recs = json.load(open(sys.argv[1]))["results"]
bad = [r for r in recs if r["status"] == "failed" and "did not finish within 3 s" in r.get("reason", "")]
assert bad, recs
assert not [r for r in recs if r["status"] == "ok"], "a record after the hang says ok"
print(len(recs), "records,", len(bad), "failed at the deadline")
PY
fi
echo "ok: $kind ended at its deadline"
