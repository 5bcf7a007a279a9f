#!/usr/bin/env bash
# doctor_classes.sh XB: doctor on 4 fake NPUs whose runtime reports two SIO
# die pairs (0-1, 2-3) and HCCS between the rest: the pairs check holds each
# pair against its own class (4 SIO pairs, 8 HCCS pairs), never one class.
set -u
out=$(FAKE_ASCEND_DEVICES=4 FAKE_ASCEND_TOPO=0-1:SIO,2-3:SIO,*:HCCS FAKE_ASCEND_GBPS=20 \
  "$1" doctor --backend ascend --quick 2>&1)
rc=$?
fail() { echo "FAIL: $*"; echo "$out"; exit 1; }
[ "$rc" -le 1 ] || fail "exit code $rc"
echo "$out" | grep -q 'fake ascend: \(rule broken\|advice\)' && fail "a rule of the runtime broken"
# Each row against its own class, whatever its verdict: a pair the busy node kept from
# judging says "could not judge: ...; N % of the pairs of its class (...)".
sio=$(echo "$out" | grep -Ec '^pairs .*(of the 4 pairs|% of the pairs) of its class \(SIO \(the two dies of one chip\) dma\)')
hccs=$(echo "$out" | grep -Ec '^pairs .*(of the 8 pairs|% of the pairs) of its class \(HCCS dma\)')
[ "$sio" -eq 4 ] || fail "$sio pairs rows judged in the SIO class, expected 4"
[ "$hccs" -eq 8 ] || fail "$hccs pairs rows judged in the HCCS class, expected 8"
grep_sio=$(echo "$out" | grep -E '^pairs +p2p 0->1 ' | grep -c 'SIO')
[ "$grep_sio" -eq 1 ] || fail "p2p 0->1 is not judged as SIO"
echo "ok: 4 SIO pairs and 8 HCCS pairs, each judged in its own class"
