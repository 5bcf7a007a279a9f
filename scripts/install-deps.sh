#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages xferbench needs, only those missing.
#
#   install-deps.sh build   what building and running need (make build, make run)
#   install-deps.sh test    that, plus the test, lint, fuzz and scheduler tools
#                           (make test: GoogleTest, Open MPI and PMIx beside MPICH,
#                           clang-14, chromium, a private Slurm, debootstrap)
#   install-deps.sh --list build|test   print the package list and exit
#
# Idempotent: a second run installs nothing and exits 0. Needs root (or sudo)
# only when something is actually missing; without either it prints the one
# apt-get line to run and goes on (exit 0: the packages may come from modules
# or a prefix; CMake reports what is really missing). Elsewhere (no dpkg: RHEL, Rocky, ...) it
# installs nothing and points at the package lists of docs/install.md.
set -euo pipefail

BUILD_PKGS=(
  build-essential cmake ninja-build ccache pkg-config git
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libhwloc-dev
  mpich libmpich-dev
  libucx-dev
  libopenblas-dev  # optional: host gemm-ar (waived without it)
)
TEST_PKGS=(
  libgtest-dev
  hwloc ucx-utils mbw  # lstopo, ucx_perftest and mbw: the peers of make bench and the tests
  openmpi-bin libopenmpi-dev  # the openmpi preset: the multi-rank tests under Open MPI's mpirun too
  libpmix-dev  # srun --mpi=pmix: Slurm's pmix plugin opens libpmix.so
  python3-matplotlib python3-prometheus-client chromium
  prometheus  # promtool: tests/cli/check_prom.py lints doctor's and fleet's --format prom
  clang-14 libclang-rt-14-dev  # the fuzz build (make fuzz): clang and its libFuzzer runtime
  clang-format-14 clang-tidy-14  # make lint: the format check and clang-tidy
  slurmctld slurmd slurm-client munge  # tests/slurm/: a private one-node Slurm (srun, salloc)
  debootstrap  # tests/install/: the package installed into a clean Debian root
)

list=0
if [ "${1:-}" = --list ]; then list=1; shift; fi
set_name=${1:-build}
case $set_name in
  build) PKGS=("${BUILD_PKGS[@]}") ;;
  test) PKGS=("${BUILD_PKGS[@]}" "${TEST_PKGS[@]}") ;;
  *) echo "install-deps: unknown set '$set_name' (build or test)" >&2; exit 2 ;;
esac
if [ $list = 1 ]; then
  printf '%s\n' "${PKGS[@]}"
  exit 0
fi

if ! command -v dpkg-query >/dev/null; then
  echo "install-deps: not a Debian or Ubuntu system: install the packages docs/install.md lists for yours" \
    "(Install), then configure with cmake; nothing installed" >&2
  exit 0
fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages of '$set_name' present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  # sudo when it can ask (a terminal) or need not (no password); else say what to run.
  if ! command -v sudo >/dev/null || { ! [ -t 0 ] && ! sudo -n true 2>/dev/null; }; then
    # Going on: they may come from elsewhere (modules, spack, a prefix);
    # CMake says what is really missing.
    echo "install-deps: not installed as Debian packages (for '$set_name'); as root run:" >&2
    echo "  apt-get install --no-install-recommends ${missing[*]}" >&2
    exit 0
  fi
  SUDO="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
