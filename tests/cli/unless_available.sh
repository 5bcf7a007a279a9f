#!/usr/bin/env bash
# unless_available.sh BACKEND XFERBENCH CMD...: runs CMD, except where BACKEND
# is available on this machine: a test of "BACKEND is unavailable" means
# nothing there, so it is skipped (exit 77, CTest's SKIP_RETURN_CODE).
backend=$1; xb=$2; shift 2
if "$xb" list 2>/dev/null | grep -Eq "^  $backend +available"; then
  echo "skipped: the $backend backend is available on this machine"
  exit 77
fi
exec "$@"
