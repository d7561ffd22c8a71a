# FindPMIx: the PMIx client library (4.x or 5.x). Defines PMIx::pmix and PMIx_VERSION.
#
# Where to look, first match wins:
#   1. PMIX_ROOT (CMake variable, else environment): the PMIx the cluster's Slurm was built
#      with (/opt/pmix, /usr/lib64/pmix, a site build). Given, it is the only place searched.
#      Use the same PMIx as slurmd's mpi/pmix plugin: client and server speak one protocol
#      across 4.x and 5.x, but a private build against another install is a common mistake.
#   2. the `pmix` pkg-config module (Debian: libpmix-dev puts it under pmix2/).
find_package(PkgConfig QUIET)
include(${CMAKE_CURRENT_LIST_DIR}/PackageRoot.cmake)
gpuaccept_package_root(_pmix_root PMIX_ROOT)
if(_pmix_root)
  find_path(PMIX_INCLUDE_DIR pmix.h PATHS "${_pmix_root}" PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_library(PMIX_LIBRARY pmix PATHS "${_pmix_root}" PATH_SUFFIXES lib64 lib NO_DEFAULT_PATH)
  set(PMIX_FOUND_BY "PMIX_ROOT=${_pmix_root}")
else()
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(PC_PMIX QUIET pmix)
  endif()
  find_path(PMIX_INCLUDE_DIR pmix.h HINTS ${PC_PMIX_INCLUDE_DIRS} PATHS /opt/pmix PATH_SUFFIXES include)
  find_library(PMIX_LIBRARY pmix HINTS ${PC_PMIX_LIBRARY_DIRS} PATHS /opt/pmix PATH_SUFFIXES lib64 lib)
  if(PC_PMIX_FOUND)
    set(PMIX_FOUND_BY "pkg-config")
  else()
    set(PMIX_FOUND_BY "system paths")
  endif()
endif()
if(PMIX_INCLUDE_DIR)
  gpuaccept_version_from_defines(PMIx_VERSION "${PMIX_INCLUDE_DIR}/pmix_version.h"
    PMIX_VERSION_MAJOR PMIX_VERSION_MINOR PMIX_VERSION_RELEASE)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(PMIx REQUIRED_VARS PMIX_LIBRARY PMIX_INCLUDE_DIR VERSION_VAR PMIx_VERSION
  REASON_FAILURE_MESSAGE "set PMIX_ROOT to the prefix of the PMIx the cluster's Slurm was built with (include/pmix.h, lib/libpmix.so) (README.md, Build on your cluster)")
if(PMIx_FOUND)
  gpuaccept_imported_library(PMIx::pmix "${PMIX_LIBRARY}" "${PMIX_INCLUDE_DIR}")
endif()
