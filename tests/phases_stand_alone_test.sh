#!/bin/bash
# Both sides of tests/phases_stand_alone.sh on made-up checkouts: a tree whose phases reach
# only src/ passes (comments that name another phase's target, a phase's own includes and
# targets, and src/'s own included); each way of reaching another phase's code fails, naming
# the file and line: an include (plain and through ../), a link to another phase's target (in
# its own CMake files or in phases/CMakeLists.txt), a source taken from another phase's
# directory, and src/ including or linking a phase.
#   tests/phases_stand_alone_test.sh       (ctest: phases.stand_alone_self_test)
set -euo pipefail
check=$(cd "$(dirname "$0")" && pwd)/phases_stand_alone.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL (phases_stand_alone): $*" >&2; exit 1; }

# A clean tree: phases alpha and beta-two, each with its own library, both over src's.
clean() {
  rm -rf "$tmp/t"
  mkdir -p "$tmp/t/src/shared" "$tmp/t/phases/alpha/gpu/kernels" "$tmp/t/phases/beta-two"
  cat >"$tmp/t/src/CMakeLists.txt" <<'CMAKE'
add_library(shared_kernels STATIC shared/kernels.cu)
CMAKE
  printf '#pragma once\nvoid shared_kernel();\n' >"$tmp/t/src/shared/kernels.h"
  printf '#include "shared/kernels.h"\nvoid shared_kernel() {}\n' >"$tmp/t/src/shared/kernels.cu"
  cat >"$tmp/t/phases/CMakeLists.txt" <<'CMAKE'
# A phase's target defined by the phases' own CMakeLists.txt, from that phase's sources.
add_library(alpha_checks STATIC
  alpha/checks.cpp)
add_subdirectory(alpha)
add_subdirectory(beta-two)
CMAKE
  printf '#include "alpha/gpu/kernels.h"\n' >"$tmp/t/phases/alpha/checks.cpp"
  cat >"$tmp/t/phases/alpha/CMakeLists.txt" <<'CMAKE'
# alpha's kernels; beta_two_model is beta-two's, named here in a comment only.
add_library(alpha_kernels STATIC gpu/kernels/common.cu)
target_link_libraries(alpha_kernels PUBLIC shared_kernels)
add_executable(gpuaccept-alpha main.cpp)
target_link_libraries(gpuaccept-alpha PRIVATE alpha_kernels)
CMAKE
  printf '#include "alpha/gpu/kernels.h"\n#include "../kernels.h"\n#include "shared/kernels.h"\n' \
    >"$tmp/t/phases/alpha/gpu/kernels/common.cu"
  printf '#pragma once\n' >"$tmp/t/phases/alpha/gpu/kernels.h"
  printf '#include <vector>\n#include "alpha/gpu/kernels.h"\nint main() {}\n' >"$tmp/t/phases/alpha/main.cpp"
  cat >"$tmp/t/phases/beta-two/CMakeLists.txt" <<'CMAKE'
add_library(beta_two_model STATIC model.cpp)  # unlike alpha_kernels, no GPU code
target_link_libraries(beta_two_model PUBLIC shared_kernels)
CMAKE
  printf '// As alpha/gpu/kernels.h does, but alone.\n#include "shared/kernels.h"\n' >"$tmp/t/phases/beta-two/model.cpp"
}

passes() {  # passes WHAT
  local out
  out=$("$check" "$tmp/t" 2>&1) || fail "$1: failed a tree that stands alone: $out"
  [[ $out == ok:* ]] || fail "$1: passed without its ok line: $out"
}
fails_naming() {  # fails_naming WHAT FILE:LINE TEXT
  local out rc=0
  out=$("$check" "$tmp/t" 2>&1) || rc=$?
  [[ $rc -eq 1 ]] || fail "$1: exit $rc, expected 1: $out"
  grep -qF "$2: $3" <<<"$out" || fail "$1: does not name '$2: $3': $out"
}

clean
passes "the clean tree"

clean
printf '#include "beta-two/model.h"\n' >>"$tmp/t/phases/alpha/main.cpp"
fails_naming "an include of another phase" phases/alpha/main.cpp:4 'includes "beta-two/model.h"'

clean
printf '#  include "../../../beta-two/model.h"\n' >>"$tmp/t/phases/alpha/gpu/kernels/common.cu"
fails_naming "an include through ../" phases/alpha/gpu/kernels/common.cu:4 'includes "../../../beta-two/model.h"'

clean
printf 'target_link_libraries(beta_two_model PRIVATE\n  alpha_kernels)\n' >>"$tmp/t/phases/beta-two/CMakeLists.txt"
fails_naming "a link to another phase's target" phases/beta-two/CMakeLists.txt:4 "names alpha_kernels, another phase's target"

clean
printf 'target_link_libraries(beta_two_model PRIVATE alpha_checks)\n' >>"$tmp/t/phases/beta-two/CMakeLists.txt"
fails_naming "a link to another phase's target defined in phases/CMakeLists.txt" phases/beta-two/CMakeLists.txt:3 \
  "names alpha_checks, another phase's target"

clean
printf 'target_sources(beta_two_model PRIVATE ../alpha/gpu/kernels/common.cu)\n' >>"$tmp/t/phases/beta-two/CMakeLists.txt"
fails_naming "a source from another phase's directory" phases/beta-two/CMakeLists.txt:3 "reaches into phases/alpha"

clean
printf '#include "alpha/gpu/kernels.h"\n' >>"$tmp/t/src/shared/kernels.h"
fails_naming "src/ including a phase" src/shared/kernels.h:3 'includes "alpha/gpu/kernels.h"'

clean
printf 'target_link_libraries(shared_kernels PUBLIC gpuaccept-alpha)\n' >>"$tmp/t/src/CMakeLists.txt"
fails_naming "src/ linking a phase" src/CMakeLists.txt:2 "names gpuaccept-alpha, another phase's target"

echo "ok: phases_stand_alone passes a tree that stands alone and fails each cross-phase include and link"
