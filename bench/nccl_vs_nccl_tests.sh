#!/usr/bin/env bash
# Side by side, in one invocation: `xferbench coll --backend cuda` and
# nccl-tests (2.19.6, https://github.com/NVIDIA/nccl-tests) for every collective
# nccl-tests has, on the same sizes (8 B x GPUs .. 1 GiB x2), -n and -w, one rank per
# GPU, float sum, out of place, like for like: both one process per GPU (nccl-tests
# under mpiexec with -g 1 where it was built with MPI; else one process driving every
# GPU with -g, said in the output, which is host-bound at small sizes), and the same
# statistic: the mean time of the iterations averaged over ranks (nccl-tests' -a 1;
# xferbench -a avg and its time_us.mean, not its default median and max over ranks).
# Prints per size the time and algbw of both and the ratio xferbench/nccl-tests; the
# targets are algbw >= 0.95x at every size from 64 KiB and, below that, a time within
# 1 us of nccl-tests'. Where no GPU is usable it prints `waived: <reason>` and exits 0.
#
#   bench/nccl_vs_nccl_tests.sh NCCL_TESTS_DIR [XFERBENCH] [GPUS] [ITERS] [WARMUP]
#   (defaults: build/default/xferbench, every visible GPU, 20, 5)
# NCCL_TESTS_DIR is nccl-tests' build/ folder (all_reduce_perf, ...), built from
# https://github.com/NVIDIA/nccl-tests (make MPI=1 MPI_HOME=...). Empty, or
# without the binaries: `waived` with that hint, exit 0.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
peers=${1-}
xb=${2:-$here/../build/default/xferbench}
# The launcher of the MPI xferbench is built with (not the `mpiexec` on PATH,
# which Debian points at whichever MPI has the higher priority).
mpiexec=$("$(dirname "$0")/../scripts/mpi-launcher.sh" "$xb")
iters=${4:-20}
warmup=${5:-5}
# shellcheck source=bench/cuda_common.sh
. "$here/cuda_common.sh"
gpus=${3:-$gpus}
if [ -z "$peers" ] || [ ! -x "$peers/all_reduce_perf" ]; then
  echo "waived: no nccl-tests${peers:+ in $peers}: build it from https://github.com/NVIDIA/nccl-tests (make MPI=1) and give its build/ folder: bench/nccl_vs_nccl_tests.sh DIR (make bench NCCL_TESTS=DIR)"
  exit 0
fi

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
min=$((8 * gpus))  # every collective splits it evenly over the ranks (float)
ops="all_reduce:allreduce all_gather:allgather reduce_scatter:reducescatter broadcast:broadcast
     reduce:reduce alltoall:alltoall sendrecv:sendrecv"
if ldd "$peers/all_reduce_perf" 2>/dev/null | grep -q libmpi; then
  nt_run=("$mpiexec" -n "$gpus"); nt_gpus=1
  echo "nccl-tests: one process per GPU ($mpiexec -n $gpus, -g 1)"
else
  nt_run=(); nt_gpus=$gpus
  echo "nccl-tests: built without MPI: one process driving $gpus GPUs (-g $gpus), host-bound at small sizes"
fi
for pair in $ops; do
  nt=${pair%%:*}; op=${pair##*:}
  # nccl-tests: -c 0, no check in the timing; -a 1, the mean averaged over ranks.
  "${nt_run[@]}" "$peers/${nt}_perf" -b "$min" -e 1G -f 2 -g "$nt_gpus" -n "$iters" -w "$warmup" \
    -c 0 -a 1 -o sum -d float > "$tmp/nt_$op.txt"
  # xferbench: one rank per GPU under mpiexec, averaged over ranks; its buffers
  # rotate each iteration as nccl-tests' do (startColl's shift).
  "$xb" coll "$op" --backend cuda --ranks "$gpus" -b "$min" -e 1G -f 2 -n "$iters" -w "$warmup" \
    --outofplace -d float --redop sum -a avg --format json -o "$tmp/xb_$op.json" -q
done

"$py" - "$tmp" "$ops" <<'PY'
import json, sys
tmp, ops = sys.argv[1], [p.split(":")[1] for p in sys.argv[2].split()]
ok = True

def nccl_tests(path):
    """size -> (time us, algbw GB/s), out of place, from nccl-tests' table."""
    rows = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 8 and f[0].isdigit() and f[1].isdigit():
            # size count type redop root time algbw busbw #wrong ... (root is -1 where unused)
            rows[int(f[0])] = (float(f[5]), float(f[6]))
    return rows

print("out of place, float, sum; mean time in us (averaged over ranks), algbw in GB/s from it; "
      "ratio = xferbench / nccl-tests algbw")
for op in ops:
    nt = nccl_tests(f"{tmp}/nt_{op}.txt")
    doc = json.load(open(f"{tmp}/xb_{op}.json"))
    print(f"\n{op} · {doc['env']['ranks']} rank(s) · xferbench timed by {doc['params'].get('timed_by', '?')}")
    print(f"{'size':>12}{'nt time':>10}{'xb time':>10}{'nt algbw':>10}{'xb algbw':>10}{'ratio':>8}  verdict")
    for r in doc["results"]:
        if r["status"] != "ok" or r["bytes"] not in nt:
            continue
        t_nt, a_nt = nt[r["bytes"]]
        t_xb = r["time_us"]["mean"]
        a_xb = r["bytes"] / (t_xb * 1e3) if t_xb > 0 else 0.0  # algbw of the mean, as nccl-tests
        ratio = a_xb / a_nt if a_nt > 0 else float("nan")
        if r["bytes"] >= 64 * 1024:
            good = ratio >= 0.95
        else:
            good = t_xb <= t_nt + 1.0
        ok = ok and good
        print(f"{r['bytes']:>12}{t_nt:>10.2f}{t_xb:>10.2f}{a_nt:>10.2f}{a_xb:>10.2f}{ratio:>8.3f}  {'ok' if good else 'MISS'}")
print(f"\ntargets (algbw >= 0.95x from 64 KiB, time within 1 us below): {'PASS' if ok else 'MISS'}")
sys.exit(0 if ok else 1)
PY
