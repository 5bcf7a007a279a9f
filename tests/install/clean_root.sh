#!/usr/bin/env bash
# The package on a machine that never saw the build: clean_root.sh BUILD_DIR
#
# Packs BUILD_DIR with cpack (.deb per component), makes a fresh minimal
# Debian 12 root with debootstrap from the archive this machine's apt uses,
# installs the xferbench package into it with apt (its declared dependencies
# come from the archive), and runs, inside the root, with none of the build's
# files present:
#   xferbench --version          the MPI, UCX, hwloc, kernel and OS it runs with
#   xferbench list               cuda unavailable, saying why (no module installed)
#   xferbench copy               host copies, every record ok
#   <its launcher> -n 2 xferbench coll allreduce    a 2-rank collective, #wrong 0
#   xferbench engine selftest    the transfer engine, ok
# then installs the xferbench-cuda package (when the build has one) without
# CUDA's libraries: list must say the module does not load and why.
#
# Exit codes: 0 ok, 1 FAIL, 77 cannot run here (not root, no debootstrap or
# cpack, the archive unreachable), with the reason. XB_ROOT_KEEP=1 keeps the
# root (its path is printed).
set -u
build=${1:?usage: clean_root.sh BUILD_DIR}
build=$(cd "$build" && pwd)
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "debootstrap and chroot need root"
for t in debootstrap cpack chroot mount umount; do
  command -v "$t" >/dev/null || skip "$t is not installed (scripts/install-deps.sh test installs debootstrap)"
done
[ -f "$build/CPackConfig.cmake" ] || { echo "clean_root.sh: $build has no CPackConfig.cmake" >&2; exit 2; }

# The Debian archive apt already uses (deb822 or one-line sources).
mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | grep -v security | head -n1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
mirror=${mirror:-http://deb.debian.org/debian}

tmp=$(mktemp -d /tmp/xb-root.XXXXXX)
root=$tmp/root
mounted=()
cleanup() {
  local rc=$? m
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null; done
  if [ "${XB_ROOT_KEEP:-0}" = 1 ]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; [ -f "$tmp/log" ] && tail -n 30 "$tmp/log"; exit 1; }
start=$SECONDS

# --- the packages -------------------------------------------------------------
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$tmp/pkg" >"$tmp/log" 2>&1 || fail "cpack failed"
core=$(ls "$tmp"/pkg/xferbench_*.deb 2>/dev/null | head -n1)
cuda=$(ls "$tmp"/pkg/xferbench-cuda_*.deb 2>/dev/null | head -n1)
[ -n "$core" ] || fail "cpack made no xferbench_*.deb ($(ls "$tmp/pkg"))"
deps=$(dpkg-deb -f "$core" Depends)
echo "package: $(basename "$core") ($(du -k "$core" | cut -f1) KiB), Depends: $deps"
case $deps in *libc6*) ;; *) fail "the package declares no shared-library dependencies: '$deps'" ;; esac

# --- a clean root ---------------------------------------------------------------
timeout 600 debootstrap --variant=minbase bookworm "$root" "$mirror" >"$tmp/log" 2>&1 ||
  skip "debootstrap from $mirror failed (no archive reachable?): $(tail -n 1 "$tmp/log")"
for m in proc sys dev dev/shm; do
  mkdir -p "$root/$m"
  case $m in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs sys "$root/sys" ;;
    dev) mount --bind /dev "$root/dev" ;;
    dev/shm) mount -t tmpfs shm "$root/dev/shm" ;;
  esac && mounted+=("$root/$m")
done
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
cp "$core" "$root/tmp/"
in_root apt-get install -y -qq --no-install-recommends "/tmp/$(basename "$core")" >"$tmp/log" 2>&1 ||
  fail "apt-get install of the package into the clean root failed"

# --- the runs ---------------------------------------------------------------------
in_root xferbench --version >"$tmp/version" 2>&1 || { cat "$tmp/version"; fail "xferbench --version"; }
in_root xferbench list >"$tmp/list" 2>&1 || { cat "$tmp/list"; fail "xferbench list exited non-zero"; }
grep -Eq 'cuda +unavailable +not built or not installed' "$tmp/list" ||
  { cat "$tmp/list"; fail "list does not say why cuda is unavailable"; }
in_root xferbench copy --backend host -s 1M -n 3 -w 1 >"$tmp/log" 2>&1 || fail "xferbench copy"
grep -Eq '([0-9]+) results: \1 ok' "$tmp/log" || fail "copy: not every record ok"
launcher=$(sed -n 's/^launcher: \([^ ]*\).*/\1/p' "$tmp/version")
in_root "$launcher" -n 2 xferbench coll allreduce --backend host -b 4K -e 1M --format json -o /tmp/c.json -q \
  >"$tmp/log" 2>&1 || fail "$launcher -n 2 xferbench coll allreduce"
python3 - "$root/tmp/c.json" <<'PY' || fail "coll: not a 2-rank run with #wrong 0"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["env"]["ranks"] == 2, d["env"]
assert d["results"] and all(r["status"] == "ok" and r["wrong"] == 0 for r in d["results"]), d["results"]
assert d["env"]["software"]["os"].startswith("Debian GNU/Linux 12"), d["env"]["software"]
PY
in_root xferbench engine selftest >"$tmp/log" 2>&1 || fail "xferbench engine selftest"
summary="list, copy, $launcher -n 2 coll, engine selftest ran in a clean root"

if [ -n "$cuda" ]; then
  cp "$cuda" "$root/tmp/"
  in_root dpkg -i "/tmp/$(basename "$cuda")" >"$tmp/log" 2>&1 || fail "dpkg -i of the cuda package"
  in_root xferbench list >"$tmp/list" 2>&1 || { cat "$tmp/list"; fail "list with the cuda module but no CUDA"; }
  grep -Eq 'cuda +unavailable +.*xferbench_cuda.so does not load: lib(cudart|cublas|nccl)' "$tmp/list" ||
    { cat "$tmp/list"; fail "list does not say the cuda module cannot load its libraries"; }
  summary="$summary; with the cuda package and no CUDA libraries, list says why"
fi
echo "ok: $summary ($((SECONDS - start)) s; $(grep -E '^(mpi|os):' "$tmp/version" | tr '\n' ' '))"
