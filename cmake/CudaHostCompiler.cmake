# Chooses nvcc's host compiler before project(), where the default g++ is newer than the
# CUDA release supports (nvcc stops with "unsupported GNU version"). Included by the top
# CMakeLists.txt; does nothing when CMAKE_CUDA_HOST_COMPILER or CUDAHOSTCXX is set.
#
# The newest gcc each CUDA release accepts (CUDA's installation guide, "supported
# compilers"): 12.0-12.3: 12; 12.4-12.6: 13; 12.8-12.9: 14; 13.x: 15. Where that gcc is not
# installed, the build stops here and says which package to add; `-allow-unsupported-compiler`
# would pass nvcc's check but leaves CUDA's headers to meet a libstdc++ they were never built
# against, so it is not used silently (pass it yourself in CMAKE_CUDA_FLAGS if you must).
if(DEFINED CMAKE_CUDA_HOST_COMPILER OR DEFINED ENV{CUDAHOSTCXX})
  return()
endif()
if(CMAKE_CUDA_COMPILER)
  set(_nvcc "${CMAKE_CUDA_COMPILER}")
elseif(DEFINED ENV{CUDACXX})
  set(_nvcc "$ENV{CUDACXX}")
else()
  find_program(GPUACCEPT_NVCC nvcc PATHS /usr/local/cuda/bin)
  set(_nvcc "${GPUACCEPT_NVCC}")
endif()
if(NOT _nvcc)
  return()   # project() will say that no CUDA compiler was found
endif()
execute_process(COMMAND "${_nvcc}" --version OUTPUT_VARIABLE _nvcc_out ERROR_QUIET)
if(NOT _nvcc_out MATCHES "release ([0-9]+)\\.([0-9]+)")
  return()
endif()
set(_cuda_major ${CMAKE_MATCH_1})
set(_cuda_minor ${CMAKE_MATCH_2})
if(_cuda_major GREATER_EQUAL 13)
  set(_max_gcc 15)
elseif(_cuda_minor GREATER_EQUAL 8)
  set(_max_gcc 14)
elseif(_cuda_minor GREATER_EQUAL 4)
  set(_max_gcc 13)
else()
  set(_max_gcc 12)
endif()
if(CMAKE_CXX_COMPILER)
  set(_cxx "${CMAKE_CXX_COMPILER}")
elseif(DEFINED ENV{CXX})
  set(_cxx "$ENV{CXX}")
else()
  find_program(GPUACCEPT_DEFAULT_CXX NAMES c++ g++)
  set(_cxx "${GPUACCEPT_DEFAULT_CXX}")
endif()
execute_process(COMMAND "${_cxx}" -dumpversion OUTPUT_VARIABLE _gxx_version OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
string(REGEX MATCH "^[0-9]+" _gxx_major "${_gxx_version}")
execute_process(COMMAND "${_cxx}" --version OUTPUT_VARIABLE _gxx_banner ERROR_QUIET)
if(NOT _gxx_major OR _gxx_major LESS_EQUAL _max_gcc OR _gxx_banner MATCHES "clang")
  return()   # the default compiler is fine for this CUDA (or is clang: nvcc judges it itself)
endif()
foreach(_v RANGE ${_max_gcc} 9 -1)
  find_program(GPUACCEPT_GXX_${_v} g++-${_v})
  if(GPUACCEPT_GXX_${_v})
    message(STATUS "CUDA ${_cuda_major}.${_cuda_minor} accepts gcc up to ${_max_gcc}, the default g++ is ${_gxx_version}: "
                   "nvcc's host compiler is ${GPUACCEPT_GXX_${_v}} (set CMAKE_CUDA_HOST_COMPILER to choose another)")
    set(CMAKE_CUDA_HOST_COMPILER "${GPUACCEPT_GXX_${_v}}" CACHE FILEPATH "nvcc's host compiler")
    return()
  endif()
endforeach()
message(FATAL_ERROR "CUDA ${_cuda_major}.${_cuda_minor} (${_nvcc}) accepts gcc up to ${_max_gcc}, but the default g++ is "
                    "${_gxx_version} and no g++-${_max_gcc} (or older) is installed: install one (Debian/Ubuntu: "
                    "g++-${_max_gcc}; RHEL: gcc-toolset-${_max_gcc}) or set CMAKE_CUDA_HOST_COMPILER")
