
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/src/common/error.cpp" "src/CMakeFiles/gpuaccept_core.dir/common/error.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/common/error.cpp.o.d"
  "/work/main/src/common/log.cpp" "src/CMakeFiles/gpuaccept_core.dir/common/log.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/common/log.cpp.o.d"
  "/work/main/src/common/progress.cpp" "src/CMakeFiles/gpuaccept_core.dir/common/progress.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/common/progress.cpp.o.d"
  "/work/main/src/config/config.cpp" "src/CMakeFiles/gpuaccept_core.dir/config/config.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/config/config.cpp.o.d"
  "/work/main/src/hw/gpu_inventory.cpp" "src/CMakeFiles/gpuaccept_core.dir/hw/gpu_inventory.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/hw/gpu_inventory.cpp.o.d"
  "/work/main/src/hw/host_inventory.cpp" "src/CMakeFiles/gpuaccept_core.dir/hw/host_inventory.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/hw/host_inventory.cpp.o.d"
  "/work/main/src/hw/nvml.cpp" "src/CMakeFiles/gpuaccept_core.dir/hw/nvml.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/hw/nvml.cpp.o.d"
  "/work/main/src/phase/phase_runner.cpp" "src/CMakeFiles/gpuaccept_core.dir/phase/phase_runner.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/phase/phase_runner.cpp.o.d"
  "/work/main/src/results/hdf5_handle.cpp" "src/CMakeFiles/gpuaccept_core.dir/results/hdf5_handle.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/results/hdf5_handle.cpp.o.d"
  "/work/main/src/results/record.cpp" "src/CMakeFiles/gpuaccept_core.dir/results/record.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/results/record.cpp.o.d"
  "/work/main/src/results/result_file.cpp" "src/CMakeFiles/gpuaccept_core.dir/results/result_file.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/results/result_file.cpp.o.d"
  "/work/main/src/results/result_writer.cpp" "src/CMakeFiles/gpuaccept_core.dir/results/result_writer.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/results/result_writer.cpp.o.d"
  "/work/main/src/results/run_dir.cpp" "src/CMakeFiles/gpuaccept_core.dir/results/run_dir.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/results/run_dir.cpp.o.d"
  "/work/main/src/slurm/slurm_env.cpp" "src/CMakeFiles/gpuaccept_core.dir/slurm/slurm_env.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/slurm/slurm_env.cpp.o.d"
  "/work/main/src/world/pmix_world.cpp" "src/CMakeFiles/gpuaccept_core.dir/world/pmix_world.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/world/pmix_world.cpp.o.d"
  "/work/main/src/world/single_world.cpp" "src/CMakeFiles/gpuaccept_core.dir/world/single_world.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/world/single_world.cpp.o.d"
  "/work/main/src/world/world.cpp" "src/CMakeFiles/gpuaccept_core.dir/world/world.cpp.o" "gcc" "src/CMakeFiles/gpuaccept_core.dir/world/world.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
