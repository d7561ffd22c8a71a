# What the Find modules (FindSlurm, FindPMIx, FindNCCL) share: where an operator pointed them,
# the version from a header's #defines, the imported target.

# gpuaccept_package_root(<out> <VAR>): the prefix an operator named for a dependency, as the
# CMake variable <VAR> (-D<VAR>=...) or else the environment variable of that name; "" when
# neither is set. Used by the Find modules (FindSlurm, FindPMIx, FindNCCL): a named prefix is
# the only place they search, so a distribution's library elsewhere is never picked up.
function(gpuaccept_package_root out var)
  set(_root "${${var}}")
  if(NOT _root AND DEFINED ENV{${var}})
    set(_root "$ENV{${var}}")
  endif()
  set(${out} "${_root}" PARENT_SCOPE)
endfunction()

# gpuaccept_version_from_defines(<out> <header> <MAJOR> <MINOR> <PATCH>): "major.minor.patch"
# from the three #define lines of a library's version header (a trailing L allowed, as
# pmix_version.h writes them); <out> is left alone where the header does not exist.
function(gpuaccept_version_from_defines out header major minor patch)
  if(NOT EXISTS "${header}")
    return()
  endif()
  file(STRINGS "${header}" _lines REGEX "#define (${major}|${minor}|${patch}) ")
  set(_parts "")
  foreach(_macro ${major} ${minor} ${patch})
    string(REGEX REPLACE ".*#define ${_macro} +([0-9]+).*" "\\1" _part "${_lines}")
    list(APPEND _parts "${_part}")
  endforeach()
  list(JOIN _parts "." _version)
  set(${out} "${_version}" PARENT_SCOPE)
endfunction()

# gpuaccept_imported_library(<target> <library file> <include dir>): the imported target a Find
# module defines once its package is found (Slurm::slurm, PMIx::pmix, NCCL::nccl).
function(gpuaccept_imported_library target library include_dir)
  if(NOT TARGET ${target})
    add_library(${target} UNKNOWN IMPORTED)
    set_target_properties(${target} PROPERTIES IMPORTED_LOCATION "${library}" INTERFACE_INCLUDE_DIRECTORIES "${include_dir}")
  endif()
endfunction()
