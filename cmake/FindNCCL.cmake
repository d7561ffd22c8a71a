# FindNCCL: NCCL's header and library. Defines NCCL::nccl and NCCL_VERSION.
#
# Where to look, first match wins:
#   1. NCCL_ROOT (CMake variable, else environment): a vendor's or a site's NCCL (HPC-X,
#      an NGC install, /opt/nccl). Given, it is the only place searched.
#   2. beside the CUDA toolkit (/usr/local/cuda ships NCCL on the GPU images), then the
#      system paths (Debian's libnccl-dev).
# NCCL_LIBRARY may name the library file itself (a static libnccl_static.a, say).
include(${CMAKE_CURRENT_LIST_DIR}/PackageRoot.cmake)
gpuaccept_package_root(_nccl_root NCCL_ROOT)
if(_nccl_root)
  find_path(NCCL_INCLUDE_DIR nccl.h PATHS "${_nccl_root}" PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_library(NCCL_LIBRARY nccl PATHS "${_nccl_root}" PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu NO_DEFAULT_PATH)
  set(NCCL_FOUND_BY "NCCL_ROOT=${_nccl_root}")
else()
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
  set(NCCL_FOUND_BY "beside CUDA or system paths")
endif()
if(NCCL_INCLUDE_DIR)
  gpuaccept_version_from_defines(NCCL_VERSION "${NCCL_INCLUDE_DIR}/nccl.h" NCCL_MAJOR NCCL_MINOR NCCL_PATCH)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR VERSION_VAR NCCL_VERSION
  REASON_FAILURE_MESSAGE "set NCCL_ROOT to the prefix of an NCCL install (include/nccl.h, lib/libnccl.so) (README.md, Build on your cluster)")
if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  gpuaccept_imported_library(NCCL::nccl "${NCCL_LIBRARY}" "${NCCL_INCLUDE_DIR}")
  # A static NCCL needs what the shared one loads itself.
  if(NCCL_LIBRARY MATCHES "\\.a$")
    set_property(TARGET NCCL::nccl PROPERTY INTERFACE_LINK_LIBRARIES CUDA::cudart_static Threads::Threads ${CMAKE_DL_LIBS} rt)
  endif()
endif()
