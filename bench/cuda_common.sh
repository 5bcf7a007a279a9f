# Sourced by the bench scripts that need a GPU: sets `py` (a python3) and
# `gpus` (the CUDA devices xferbench sees), after checking that $xb exists;
# where the cuda backend is unavailable it prints `waived: <reason>` and
# exits 0, so `make bench` runs everywhere.
py=$(command -v /usr/bin/python3 || command -v python3)
[ -x "$xb" ] || { echo "no xferbench at $xb (make build)"; exit 2; }
why=$("$xb" list --format json | "$py" -c '
import json, sys
for b in json.load(sys.stdin)["backends"]:
    if b["name"] == "cuda" and not b["available"]: print(b["reason"])')
if [ -n "$why" ]; then echo "waived: $why"; exit 0; fi
gpus=$("$xb" list --backend cuda --format json | "$py" -c 'import json,sys; print(len(json.load(sys.stdin)["devices"]))')
