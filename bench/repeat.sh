#!/usr/bin/env bash
# Runs a bench script N times in a row and prints the spread of its
# headline (the "headline: R" line each script ends with), so one lucky run
# does not pass a target: the exit status is 1 when any run missed it.
#
#   bench/repeat.sh N bench/host_copy_vs_memcpy.sh [ARGS...]
set -uo pipefail
n=${1:?usage: bench/repeat.sh N SCRIPT [ARGS...]}
shift
script=${1:?usage: bench/repeat.sh N SCRIPT [ARGS...]}
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "repeat.sh: N must be a positive integer, not '$n'" >&2; exit 2; }
heads=() missed=0
for i in $(seq 1 "$n"); do
  echo "== $(basename "$script") run $i of $n"
  out=$("$@" 2>&1); rc=$?
  echo "$out"
  [ "$rc" -eq 2 ] && exit 2  # the script could not run (missing tool): say so once
  [ "$rc" -ne 0 ] && missed=$((missed + 1))
  h=$(echo "$out" | sed -n 's/^headline: //p' | tail -1)
  heads+=("${h:-nan}")
done
echo "== $(basename "$script"): headline over $n runs: ${heads[*]} (min $(printf '%s\n' "${heads[@]}" | sort -g | head -1), max $(printf '%s\n' "${heads[@]}" | sort -g | tail -1)); missed the target in $missed of $n"
[ "$missed" -eq 0 ]
