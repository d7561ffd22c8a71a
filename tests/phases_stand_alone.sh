#!/bin/bash
# Every phase stands alone (issue 40): no file of one phase (phases/NAME/) includes another
# phase's files, and no phase's CMakeLists.txt names another phase's targets or sources; src/
# includes and links no phase at all. What two phases share lives in src/ (the training
# phases' kernels in src/train: gpuaccept_train_kernels), so a change to one phase cannot
# change what another computes.
#   tests/phases_stand_alone.sh [ROOT]      (ROOT: a checkout; default the one this script is in)
# Prints every cross-phase include and link as FILE:LINE: what it reaches, and exits 1; prints
# how many phases it checked and exits 0 when there is none. ctest: phases.stand_alone;
# tests/phases_stand_alone_test.sh shows both sides on made-up trees.
#
# What counts: an #include whose path starts with another phase's directory name, after any
# number of ../ (phases/ is every phase's include root, so "ddp/gpu/kernels.h" is the ddp
# phase's file), and in CMake text outside comments another phase's target (add_library or
# add_executable under phases/OTHER) as a whole word, or a path into phases/OTHER. Tests
# (tests/) may reach any phase: they are not a phase.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
[[ -d $root/phases && -d $root/src ]] || { echo "phases_stand_alone: no phases/ and src/ under $root" >&2; exit 2; }
cd "$root"

mapfile -t phases < <(find phases -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)
[[ ${#phases[@]} -gt 0 ]] || { echo "phases_stand_alone: no phase under $root/phases" >&2; exit 2; }

found=0
report() {  # report WHERE WHAT
  echo "$1: $2"
  found=1
}
# An ERE alternation of the words given, '.' and '+' escaped.
alternation() { local IFS='|'; sed -E 's/[.+]/\\&/g' <<<"$*"; }

# CMake files of a directory, and each one's non-comment lines as LINE:TEXT (a '#' starts a
# comment: CMake's bracket comments and a '#' inside a quoted argument are not told apart;
# neither is used here).
cmake_files() { find "$1" -type f \( -name CMakeLists.txt -o -name '*.cmake' \) | sort; }
cmake_code() { awk '{ sub(/#.*/, ""); if ($0 ~ /[^ \t]/) printf "%d:%s\n", FNR, $0 }' "$1"; }

# The targets each phase defines (add_library, add_executable): those of its own CMake files,
# and those that phases/CMakeLists.txt defines from its sources (discover's).
declare -A targets_of
for p in "${phases[@]}"; do
  names=()
  while IFS= read -r f; do
    while IFS= read -r t; do names+=("$t"); done < <(cmake_code "$f" |
      grep -oE 'add_(library|executable)\([[:space:]]*[A-Za-z0-9_.+-]+' | sed -E 's/^add_(library|executable)\([[:space:]]*//' || true)
  done < <(cmake_files "phases/$p")
  targets_of[$p]="${names[*]}"
done
for f in phases/*.cmake phases/CMakeLists.txt; do
  [[ -f $f ]] || continue
  # Each add_library/add_executable call on one line: its name, then its sources' first directory.
  while read -r name first_source; do
    owner=${first_source%%/*}
    [[ -n ${targets_of[$owner]+set} ]] && targets_of[$owner]+=" $name"
  done < <(cmake_code "$f" | cut -d: -f2- | tr '\n' ' ' |
    grep -oE 'add_(library|executable)\([^)]*\)' | sed -E 's/^add_(library|executable)\(//; s/\)$//' |
    awk '{ src = ""; for (i = 2; i <= NF; ++i) if ($i ~ /\//) { src = $i; break } if (src != "") print $1, src }' || true)
done

# check DIR OWNER: the sources and CMake files of DIR against every phase but OWNER ("" for
# src/, which may reach no phase).
check() {
  local dir=$1 owner=$2 others=() other_targets=() p where text f
  for p in "${phases[@]}"; do
    [[ $p == "$owner" ]] && continue
    others+=("$p")
    read -ra t <<<"${targets_of[$p]}"
    other_targets+=("${t[@]}")
  done
  [[ ${#others[@]} -gt 0 ]] || return 0
  local phase_re target_re
  phase_re=$(alternation "${others[@]}")
  # Includes: a path starting with another phase's directory, after any number of ../.
  while IFS=: read -r f where text; do
    text=${text#*include}
    report "$f:$where" "includes ${text#"${text%%[![:space:]]*}"}"
  done < <(grep -rnE --include='*.h' --include='*.hpp' --include='*.cpp' --include='*.cc' --include='*.cu' \
    --include='*.cuh' "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"](\.\./)*($phase_re)/" "$dir" | sort || true)
  # CMake: another phase's target as a whole word, or a path into another phase.
  [[ ${#other_targets[@]} -gt 0 ]] && target_re=$(alternation "${other_targets[@]}") || target_re='$^'
  while IFS= read -r f; do
    while IFS=: read -r where text; do
      if [[ $text =~ (^|[^A-Za-z0-9_.+-])($target_re)([^A-Za-z0-9_.+-]|$) ]]; then
        report "$f:$where" "names ${BASH_REMATCH[2]}, another phase's target"
      fi
      if [[ $text =~ (^|[^A-Za-z0-9_-])(phases/|\.\./)($phase_re)(/|[[:space:]]|\)|\"|$) ]]; then
        report "$f:$where" "reaches into phases/${BASH_REMATCH[3]}"
      fi
    done < <(cmake_code "$f")
  done < <(cmake_files "$dir")
}

for p in "${phases[@]}"; do check "phases/$p" "$p"; done
check src ""

if [[ $found -ne 0 ]]; then
  echo "FAIL: a phase reaches another phase's code (above); move what both use into src/" >&2
  exit 1
fi
echo "ok: ${#phases[@]} phases (${phases[*]}) and src/ include and link no other phase's code"
