
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/src/cuda/cuda_check.cpp" "src/CMakeFiles/gpuaccept_cuda.dir/cuda/cuda_check.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_cuda.dir/cuda/cuda_check.cpp.o.d"
  "/work/main/src/cuda/nccl_comm.cpp" "src/CMakeFiles/gpuaccept_cuda.dir/cuda/nccl_comm.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_cuda.dir/cuda/nccl_comm.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build-report/src/CMakeFiles/gpuaccept_core.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
