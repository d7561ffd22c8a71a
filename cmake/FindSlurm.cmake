# FindSlurm: libslurm and <slurm/slurm.h>. Defines Slurm::slurm.
# Uses the `slurm` pkg-config module where the distribution ships one; Debian 12's
# libslurm-dev does not, so fall back to the ordinary header/library search.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_SLURM QUIET slurm)
endif()
find_path(SLURM_INCLUDE_DIR slurm/slurm.h HINTS ${PC_SLURM_INCLUDE_DIRS} ENV SLURM_ROOT PATH_SUFFIXES include)
find_library(SLURM_LIBRARY slurm HINTS ${PC_SLURM_LIBRARY_DIRS} ENV SLURM_ROOT PATH_SUFFIXES lib lib64)
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
find_package_handle_standard_args(Slurm REQUIRED_VARS SLURM_LIBRARY SLURM_INCLUDE_DIR VERSION_VAR SLURM_VERSION)
if(Slurm_FOUND AND NOT TARGET Slurm::slurm)
  add_library(Slurm::slurm UNKNOWN IMPORTED)
  set_target_properties(Slurm::slurm PROPERTIES
    IMPORTED_LOCATION "${SLURM_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${SLURM_INCLUDE_DIR}")
endif()
