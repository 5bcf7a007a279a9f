#!/usr/bin/env bash
# Runs the fuzz targets built in BUILD (cmake --preset fuzz), each for SECONDS
# on a copy of its seed corpus (fuzz/corpus/<target>/, left unchanged), after
# replaying its reproducers (fuzz/regressions/<target>/). Prints executions,
# exec/s and corpus size per target; exits 1 when any target failed, with
# the crashing input kept under BUILD/fuzz-work/<target>/.
#   fuzz/run.sh BUILD SECONDS [TARGET...]     (default: every target built)
set -euo pipefail

build=${1:?usage: fuzz/run.sh BUILD SECONDS [TARGET...]}
secs=${2:?usage: fuzz/run.sh BUILD SECONDS [TARGET...]}
shift 2
src=$(cd "$(dirname "$0")" && pwd)
bin=$build/fuzz
work=$build/fuzz-work
if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets <"$bin/targets.txt"
fi

failed=()
rows=()
for t in "${targets[@]}"; do
  exe=$bin/fuzz_$t
  [ -x "$exe" ] || { echo "fuzz: $exe is not built" >&2; exit 2; }
  dir=$work/$t
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp "$src/corpus/$t"/* "$dir/corpus/"
  opts=(-timeout=10 -rss_limit_mb=2048 -artifact_prefix="$dir/artifacts/")
  [ -f "$src/dict/$t.dict" ] && opts+=(-dict="$src/dict/$t.dict")

  # Reproducers of bugs found earlier: each must pass now.
  shopt -s nullglob
  repro=("$src/regressions/$t"/*)
  shopt -u nullglob
  if [ ${#repro[@]} -gt 0 ] && ! "$exe" "${opts[@]}" "${repro[@]}" >"$dir/regressions.log" 2>&1; then
    echo "fuzz: $t fails on a reproducer in fuzz/regressions/$t/ (log: $dir/regressions.log)" >&2
    grep -E 'Running:|contract broken|ERROR|SUMMARY|what\(\)' "$dir/regressions.log" | tail -5 >&2 || true
    failed+=("$t")
    rows+=("$(printf '%-16s %12s %10s %10s  %s' "$t" - - - 'REPRODUCER FAILS')")
    continue
  fi

  status=ok
  if ! "$exe" "${opts[@]}" -max_total_time="$secs" -print_final_stats=1 "$dir/corpus" \
    >"$dir/fuzz.log" 2>&1; then
    status=CRASH
    failed+=("$t")
    echo "fuzz: $t crashed (log: $dir/fuzz.log; input: $(ls "$dir/artifacts"/* 2>/dev/null | head -1))" >&2
    grep -E 'contract broken|ERROR|SUMMARY|what\(\)|^    #[0-9]' "$dir/fuzz.log" | head -14 >&2 || true
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/fuzz.log" | tail -1)
  files=$(find "$dir/corpus" -type f | wc -l)
  bytes=$(du -sb "$dir/corpus" | cut -f1)
  rows+=("$(printf '%-16s %12s %10s %10s  %s' "$t" "${execs:--}" "${rate:--}" "$files/${bytes}b" "$status")")
done

printf '\n%-16s %12s %10s %10s  %s\n' target executions exec/s corpus status
printf '%s\n' "${rows[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
