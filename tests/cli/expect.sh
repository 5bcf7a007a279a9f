#!/usr/bin/env bash
# expect.sh RC REGEX CMD...: runs CMD, fails unless it exits with RC and its
# stdout+stderr matches the extended REGEX. Bad-input cases must also print
# exactly one line on stderr and nothing that looks like a crash
# (EXPECT_OWN_LINES=1: one line of xferbench's, whatever the launcher adds).
set -u
want_rc=$1; pattern=$2; shift 2
# The command as it can be pasted back: each argument shell-quoted.
cmd=$(printf '%q ' "$@"); cmd=${cmd% }
out=$(mktemp); err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
timeout 100 "$@" >"$out" 2>"$err"
rc=$?
fail() { echo "FAIL: $*"; echo "--- command: $cmd"; echo "--- stdout:"; head -50 "$out"; echo "--- stderr:"; cat "$err"; exit 1; }
[ "$rc" -eq "$want_rc" ] || fail "exit code $rc, expected $want_rc"
cat "$out" "$err" | grep -Eq -- "$pattern" || fail "output does not match /$pattern/"
if grep -Eq 'Sanitizer|terminate called|Segmentation|Aborted|core dumped' "$err"; then fail "crash signature on stderr"; fi
# The fake CANN runtime's report at exit of a calling rule the run broke.
if grep -q 'fake ascend: rule broken' "$err"; then fail "a rule of the Ascend runtime broken"; fi
# And its advice not followed (Huawei's recommendation the runtime does not enforce).
if grep -q 'fake ascend: advice' "$err"; then fail "advice of the Ascend runtime not followed"; fi
if [ "$want_rc" -eq 2 ]; then
  lines=$(wc -l <"$err")
  # Under a launcher that adds lines of its own (Open MPI's mpirun reports a
  # process's non-zero exit), count xferbench's lines only.
  [ "${EXPECT_OWN_LINES:-0}" = 1 ] && lines=$(grep -c '^xferbench' "$err")
  [ "$lines" -eq 1 ] || fail "usage error printed $lines lines on stderr, expected 1"
fi
echo "ok: rc=$rc, matched /$pattern/"
