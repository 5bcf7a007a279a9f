#!/usr/bin/env bash
# clang-tidy (.clang-tidy: bugprone, performance, function size) over the
# tree's C++ sources, with BUILD_DIR's compile_commands.json (any configured
# preset; `make tidy` uses build/default). Prints every finding, exits 1 if
# there is one. Files: those given, or every .cpp of src/, tests/ and bench/
# that the build compiles (.cu files are nvcc's, not clang's; fuzz/ is built
# by its own preset). TIDY_JOBS parallel runs (2).
#
# A file found clean is remembered by the key of its run (scripts/tidy_key.py: clang-tidy's
# version, .clang-tidy, the preprocessed translation unit) under TIDY_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/xferbench/tidy; TIDY_CACHE=off runs every file); a later run
# of the same key is not repeated. Findings are never cached.
set -euo pipefail
usage="usage: scripts/tidy.sh BUILD_DIR [FILE.cpp...]"
build=${1:?$usage}
shift
cd "$(dirname "$0")/.."
root=$PWD
tidy=${CLANG_TIDY:-clang-tidy-14}
jobs=${TIDY_JOBS:-2}
command -v "$tidy" >/dev/null || { echo "tidy: $tidy not found (apt-get install clang-tidy-14)" >&2; exit 2; }
db=$build/compile_commands.json
[ -f "$db" ] || { echo "tidy: no $db: configure first (cmake --preset default)" >&2; exit 2; }

if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(python3 -c '
import json, os, sys
root = sys.argv[2]
seen = set()
for e in json.load(open(sys.argv[1])):
    f = os.path.normpath(os.path.join(e["directory"], e["file"]))
    rel = os.path.relpath(f, root)
    if rel.endswith(".cpp") and rel.split("/")[0] in ("src", "tests", "bench") and rel not in seen:
        seen.add(rel)
        print(rel)
' "$db" "$root" | sort)
fi
[ ${#files[@]} -gt 0 ] || { echo "tidy: no C++ sources in $db" >&2; exit 2; }

cache=${TIDY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xferbench/tidy}
[ "$cache" = off ] || mkdir -p "$cache" 2>/dev/null || cache=off
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
start=$SECONDS
# One log per file, so parallel runs do not interleave. -Wno-unknown-warning-option:
# the build's flags are gcc's; clang-tidy only reads them.
printf '%s\n' "${files[@]}" | xargs -P "$jobs" -I{} sh -c '
  log="$1/$(echo "$3" | tr / _).log"
  key=""
  if [ "$5" != off ]; then
    key=$(/usr/bin/python3 scripts/tidy_key.py "$4" "$3" "$2" 2>/dev/null) || key=""
    if [ -n "$key" ] && [ -e "$5/$key" ]; then echo "$3" >>"$1/cached"; exit 0; fi
  fi
  if "$2" -p "$4" --quiet --extra-arg=-Wno-unknown-warning-option "$3" >"$log" 2>&1; then
    [ -z "$key" ] || : >"$5/$key"
  else
    echo "$3" >>"$1/failed"
  fi
' _ "$logs" "$tidy" {} "$build" "$cache" || true
cached=0
[ -f "$logs/cached" ] && cached=$(wc -l <"$logs/cached")
if [ -f "$logs/failed" ]; then
  while read -r f; do
    echo "== $f"
    grep -v -E '^[0-9]+ (warnings?|errors?) (generated|treated as errors)\.?$|^Suppressed [0-9]+ warnings' \
      "$logs/$(echo "$f" | tr / _).log" || true
  done < <(sort "$logs/failed")
  echo "tidy: findings in $(wc -l <"$logs/failed") of ${#files[@]} files ($((SECONDS - start)) s)" >&2
  exit 1
fi
echo "tidy: ${#files[@]} files clean, $cached of them as found clean before ($((SECONDS - start)) s)"
