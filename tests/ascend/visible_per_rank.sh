#!/usr/bin/env bash
# visible_per_rank.sh CMD...: runs CMD with ASCEND_RT_VISIBLE_DEVICES set to
# this rank's host-local rank, as a site's launch wrapper does to give each
# rank one NPU of its own (it then sees exactly one, NPU 0 to it). The local
# rank comes from the launcher: MPICH's hydra, Open MPI, Slurm.
set -eu
local_rank=${MPI_LOCALRANKID:-${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-}}}
if [ -z "$local_rank" ]; then
  echo "visible_per_rank.sh: no local rank from the launcher" >&2
  exit 3
fi
export ASCEND_RT_VISIBLE_DEVICES=$local_rank
exec "$@"
