# Sourced by the GPU tests (CTest label `gpu`): need_gpu XFERBENCH returns
# where a GPU is usable; else exits 77 (skipped) with the reason where no GPU
# is here, and 1 (failed) where one is here but unusable: the cuda backend
# says it is broken (the driver lists GPUs the runtime refuses), or
# nvidia-smi lists a GPU the backend does not see (CUDA review N7).
need_gpu() {
  why=$("$1" list --format json | /usr/bin/python3 -c '
import json, sys
for b in json.load(sys.stdin).get("backends", []):
    if b["name"] == "cuda" and not b["available"]:
        print(("broken " if b.get("broken") else "absent ") + b["reason"])')
  case $why in
    "") return 0 ;;
    broken*) echo "FAIL: a GPU is here but unusable: ${why#broken }"; exit 1 ;;
  esac
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "FAIL: nvidia-smi lists a GPU but the cuda backend is unavailable: ${why#absent }"
    exit 1
  fi
  echo "SKIP: no GPU here: ${why#absent }"
  exit 77
}
