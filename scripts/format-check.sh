#!/usr/bin/env bash
# Checks that every C++ and CUDA file in git follows .clang-format (make
# check-format, part of make lint): prints each drifting line, exits 1 if any.
# `make format` rewrites them. clang-format 14, the version the tree is
# formatted with (another major version formats some constructs differently).
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=${CLANG_FORMAT:-clang-format-14}
command -v "$fmt" >/dev/null || { echo "format-check: $fmt not found (apt-get install clang-format-14)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh')
if "$fmt" --dry-run --Werror "${files[@]}"; then
  echo "format-check: ${#files[@]} files follow .clang-format"
else
  echo "format-check: the files above drift from .clang-format; run make format" >&2
  exit 1
fi
