#!/usr/bin/env bash
# What each make target installs: deps_lists.sh SOURCE_DIR
#   install-deps.sh's `build` set holds no test, lint, browser or scheduler
#   tool, and the `test` set holds all of `build`; `make build` and `make run`
#   ask for `build`, `make test` for `test` (read off make -n, nothing run).
set -u
src=${1:?usage: deps_lists.sh SOURCE_DIR}
fail() { echo "FAIL: $*"; exit 1; }
build=$("$src/scripts/install-deps.sh" --list build) || fail "install-deps.sh --list build"
test=$("$src/scripts/install-deps.sh" --list test) || fail "install-deps.sh --list test"
for p in libgtest-dev chromium clang-14 clang-tidy-14 clang-format-14 libclang-rt-14-dev slurmctld slurmd \
  slurm-client munge debootstrap python3-matplotlib openmpi-bin mbw; do
  grep -qx "$p" <<<"$build" && fail "the build set installs $p, a test or lint tool"
  grep -qx "$p" <<<"$test" || fail "the test set lacks $p"
done
while read -r p; do grep -qx "$p" <<<"$test" || fail "the test set lacks $p of the build set"; done <<<"$build"
for target in build run; do
  cmds=$(make -n -C "$src" "$target" 2>/dev/null | grep 'install-deps.sh')
  grep -q 'install-deps.sh build' <<<"$cmds" || fail "make $target does not install the build set: '$cmds'"
  grep -q 'install-deps.sh test' <<<"$cmds" && fail "make $target installs the test set"
done
make -n -C "$src" test 2>/dev/null | grep -q 'install-deps.sh test' || fail "make test does not install the test set"
echo "ok: build set $(wc -l <<<"$build") packages, test set $(wc -l <<<"$test"); make build/run ask for build, make test for test"
