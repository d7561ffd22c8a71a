#!/bin/bash
# `make -f Makefile.slurm binaries`, what `acceptance` runs first where a cluster answers (issue
# 36): with binaries in BIN it does nothing; with none it configures against what CMake finds
# and, where a dependency is missing, stops naming what to set, and never installs anything
# (apt-get, dnf, yum and sudo are shimmed to record any call).
#   tests/build_without_install.sh SOURCE_DIR BIN_DIR
set -euo pipefail
src=$1 bin=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL (build without install): $*" >&2; exit 1; }
mkdir -p "$tmp/shims"
for c in apt-get dnf yum sudo; do
  printf '#!/bin/sh\necho "%s $*" >>"%s/called"\nexit 1\n' "$c" "$tmp" >"$tmp/shims/$c"
  chmod +x "$tmp/shims/$c"
done
export PATH=$tmp/shims:$PATH

# Binaries there (this build tree's): nothing configured, nothing built.
out=$(make -s -f "$src/Makefile.slurm" binaries BUILD="$(dirname "$bin")" 2>&1) || fail "with binaries present: $out"
[[ -z $out ]] || fail "with binaries present it said: $out"

# None, and a dependency CMake cannot find: it stops, says what to set, installs nothing.
if SLURM_ROOT=$tmp/no-slurm make -s -f "$src/Makefile.slurm" binaries BUILD="$tmp/build" >"$tmp/out" 2>&1; then
  fail "configured and built against a SLURM_ROOT that does not exist"
fi
grep -q "Could NOT find Slurm" "$tmp/out" || fail "no word of Slurm: $(cat "$tmp/out")"
grep -q "set SLURM_ROOT" "$tmp/out" || fail "does not say what to set: $(cat "$tmp/out")"
grep -q "nothing was installed" "$tmp/out" || fail "does not say that nothing was installed"
[[ ! -e $tmp/called ]] || fail "tried to install: $(cat "$tmp/called")"
echo "build without install: ok"
