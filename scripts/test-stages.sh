#!/usr/bin/env bash
# make test's driver: runs each stage (a make target) in order, stops at the first that
# fails, and at the end prints every stage's time against its share of the budget and the
# slowest tests of the CTest passes (scripts/slowest_tests.py, from each pass's JUnit file).
#
#   scripts/test-stages.sh STAGE:SHARE_SECONDS...
#
# The budget (CONTRIBUTING.md, "Build and test"): a fresh clone with the packages in and
# an empty ccache finishes `make test` in 2,700 s on the 2-core machine; a stage past its
# share says so on its line (exit status unchanged: the share is a warning, the 90 minutes
# of CI the limit). XB_TEST_BUDGET overrides the total; XB_TEST_KEEP_GOING=1 runs the
# stages after a failed one too (the exit status is still the first failure's).
set -uo pipefail
cd "$(dirname "$0")/.."
budget=${XB_TEST_BUDGET:-2700}
make=${MAKE:-make}
names=() shares=() times=() results=()
start_all=$SECONDS
rc=0
mkdir -p build
rm -f build/junit-*.xml
for spec in "$@"; do
  names+=("${spec%%:*}") shares+=("${spec#*:}")
done
for i in "${!names[@]}"; do
  name=${names[$i]} share=${shares[$i]}
  echo "== make test: $name (its share: ${share} s)"
  t0=$SECONDS
  "$make" --no-print-directory "$name"
  r=$?
  times+=($((SECONDS - t0)))
  if [ $r -ne 0 ]; then
    results+=("FAILED (exit $r)")
    [ $rc -ne 0 ] || rc=$r
    [ "${XB_TEST_KEEP_GOING:-0}" = 1 ] || break
    continue
  fi
  results+=(ok)
done
total=$((SECONDS - start_all))

echo
echo "== make test: stages"
printf '%-18s %8s %8s  %s\n' stage seconds share result
for i in "${!times[@]}"; do
  note=${results[$i]}
  if [ "${times[$i]}" -gt "${shares[$i]}" ]; then
    note="$note; over its share by $((times[i] - shares[i])) s"
  fi
  printf '%-18s %8d %8d  %s\n' "${names[$i]}" "${times[$i]}" "${shares[$i]}" "$note"
done
for ((i = ${#times[@]}; i < ${#names[@]}; i++)); do
  printf '%-18s %8s %8d  %s\n' "${names[$i]}" - "${shares[$i]}" "not run"
done
over=""
[ $total -gt "$budget" ] && over=" (over the budget by $((total - budget)) s)"
printf '%-18s %8d %8d%s\n' total "$total" "$budget" "$over"

if ls build/junit-*.xml >/dev/null 2>&1; then
  echo
  /usr/bin/python3 scripts/slowest_tests.py 30 build/junit-*.xml || true
fi
exit $rc
