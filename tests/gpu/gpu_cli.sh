#!/bin/sh
# GPU CLI checks (CTest label `gpu`): exit 77 (skipped) with the reason where
# no GPU is here, 1 where one is here but unusable (need_gpu.sh), else run
# the command and expect a pattern.
# usage: gpu_cli.sh XFERBENCH PATTERN [mpiexec -n N|-] ARGS...
# XB_EXPECT_RC (default 0): the exit code expected.
xb=$1 pattern=$2 np=$3
mpiexec=$("$(dirname "$0")/../../scripts/mpi-launcher.sh" "$xb")  # the launcher of its MPI
shift 3
. "$(dirname "$0")/need_gpu.sh"
need_gpu "$xb"
if [ "$np" = "gpus" ] || [ "$np" = "allgpus" ]; then  # one rank per GPU: at most 2, or 8
  most=2
  [ "$np" = "allgpus" ] && most=8
  np=$("$xb" list --backend cuda --format json | /usr/bin/python3 -c '
import json, sys
print(min('"$most"', len(json.load(sys.stdin)["env"]["devices"])))')
fi
if [ "$np" = "-" ]; then
  out=$("$xb" "$@" 2>&1)
else
  out=$("$mpiexec" -n "$np" "$xb" "$@" 2>&1)
fi
rc=$?
echo "$out"
want=${XB_EXPECT_RC:-0}
[ $rc -eq "$want" ] || { echo "FAIL: exit code $rc, expected $want"; exit 1; }
echo "$out" | grep -Eq -- "$pattern" || { echo "FAIL: no line matches '$pattern'"; exit 1; }
