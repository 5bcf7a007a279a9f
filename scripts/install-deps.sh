#!/usr/bin/env bash
# Installs the Debian packages xferbench needs, only those that are missing.
# Idempotent: a second run installs nothing and exits 0. Needs root (or sudo)
# only when something is actually missing.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build ccache pkg-config git
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libhwloc-dev hwloc
  libgtest-dev
  mpich libmpich-dev
  openmpi-bin libopenmpi-dev  # the openmpi preset: the multi-rank tests under Open MPI's mpirun too
  libpmix-dev  # srun --mpi=pmix: Slurm's pmix plugin opens libpmix.so
  mbw
  libucx-dev ucx-utils
  libopenblas-dev
  python3-matplotlib python3-prometheus-client chromium
  clang-14 libclang-rt-14-dev  # the fuzz build (make fuzz): clang and its libFuzzer runtime
  clang-format-14 clang-tidy-14  # make lint: the format check and clang-tidy
  slurmctld slurmd slurm-client munge  # tests/slurm/: a private one-node Slurm (srun, salloc)
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 2; }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
