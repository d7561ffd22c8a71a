# FindSlurm: libslurm and <slurm/slurm.h>. Defines Slurm::slurm and SLURM_VERSION.
#
# Where to look, first match wins:
#   1. SLURM_ROOT (CMake variable, else environment): the prefix of the cluster's own Slurm,
#      e.g. /opt/slurm for SchedMD's packages or a site build. Given, it is the only place
#      searched, so a distribution libslurm elsewhere on the machine is never picked up.
#   2. the `slurm` pkg-config module, where the distribution ships one (Debian 12 does not);
#   3. the system paths, then /opt/slurm and /usr/local.
# The client library must be of the controller's release or at most two older (Slurm's
# rule); gpuaccept-discover checks this at run time.
find_package(PkgConfig QUIET)
include(${CMAKE_CURRENT_LIST_DIR}/PackageRoot.cmake)
gpuaccept_package_root(_slurm_root SLURM_ROOT)
if(_slurm_root)
  find_path(SLURM_INCLUDE_DIR slurm/slurm.h PATHS "${_slurm_root}" PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_library(SLURM_LIBRARY slurm PATHS "${_slurm_root}" PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu NO_DEFAULT_PATH)
  set(SLURM_FOUND_BY "SLURM_ROOT=${_slurm_root}")
else()
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(PC_SLURM QUIET slurm)
  endif()
  find_path(SLURM_INCLUDE_DIR slurm/slurm.h HINTS ${PC_SLURM_INCLUDE_DIRS} PATHS /opt/slurm /usr/local PATH_SUFFIXES include)
  find_library(SLURM_LIBRARY slurm HINTS ${PC_SLURM_LIBRARY_DIRS} PATHS /opt/slurm /usr/local PATH_SUFFIXES lib64 lib)
  if(PC_SLURM_FOUND)
    set(SLURM_FOUND_BY "pkg-config")
  else()
    set(SLURM_FOUND_BY "system paths")
  endif()
endif()
if(SLURM_INCLUDE_DIR AND EXISTS "${SLURM_INCLUDE_DIR}/slurm/slurm_version.h")
  file(STRINGS "${SLURM_INCLUDE_DIR}/slurm/slurm_version.h" _sv REGEX "#define SLURM_VERSION_NUMBER")
  string(REGEX REPLACE ".*0x([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F]).*" "\\1;\\2;\\3" _parts "${_sv}")
  set(SLURM_VERSION "")
  foreach(_p IN LISTS _parts)
    math(EXPR _d "0x${_p}")
    list(APPEND SLURM_VERSION ${_d})
  endforeach()
  list(JOIN SLURM_VERSION "." SLURM_VERSION)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Slurm REQUIRED_VARS SLURM_LIBRARY SLURM_INCLUDE_DIR VERSION_VAR SLURM_VERSION
  REASON_FAILURE_MESSAGE "set SLURM_ROOT to the prefix of the cluster's Slurm (its include/slurm/slurm.h and lib64/libslurm.so) (README.md, Build on your cluster)")
if(Slurm_FOUND)
  gpuaccept_imported_library(Slurm::slurm "${SLURM_LIBRARY}" "${SLURM_INCLUDE_DIR}")
endif()
