#!/bin/bash
# Builds the libFuzzer targets (tests/fuzz/*_fuzz.cpp) with clang++ into OUT (default
# build/fuzz), apart from the main g++ build. Exits 77 (ctest: skipped) with the reason
# when clang++ or libFuzzer's runtime (Debian: clang, libclang-rt-14-dev) is missing.
#   tests/fuzz/build.sh [OUT]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build/fuzz}
cxx=${FUZZ_CXX:-clang++}
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "fuzz: SKIP: $cxx not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
  'extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }' > "$probe/p.cpp"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" 2>"$probe/err"; then
  echo "fuzz: SKIP: $cxx cannot link -fsanitize=fuzzer,address,undefined (libFuzzer's runtime missing?" \
       "Debian: apt-get install libclang-rt-14-dev): $(head -n 3 "$probe/err")" >&2
  exit 77
fi
make -s -f "$root/tests/fuzz/Makefile" OUT="$out" FUZZ_CXX="$cxx" -j"$(nproc)"
echo "fuzz: targets built in $out/bin"
