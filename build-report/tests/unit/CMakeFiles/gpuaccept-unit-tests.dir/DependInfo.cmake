
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/tests/unit/main.cpp" "tests/unit/CMakeFiles/gpuaccept-unit-tests.dir/main.cpp.o" "gcc" "tests/unit/CMakeFiles/gpuaccept-unit-tests.dir/main.cpp.o.d"
  "/work/main/tests/unit/test_config.cpp" "tests/unit/CMakeFiles/gpuaccept-unit-tests.dir/test_config.cpp.o" "gcc" "tests/unit/CMakeFiles/gpuaccept-unit-tests.dir/test_config.cpp.o.d"
  "/work/main/tests/unit/test_discover_checks.cpp" "tests/unit/CMakeFiles/gpuaccept-unit-tests.dir/test_discover_checks.cpp.o" "gcc" "tests/unit/CMakeFiles/gpuaccept-unit-tests.dir/test_discover_checks.cpp.o.d"
  "/work/main/tests/unit/test_record.cpp" "tests/unit/CMakeFiles/gpuaccept-unit-tests.dir/test_record.cpp.o" "gcc" "tests/unit/CMakeFiles/gpuaccept-unit-tests.dir/test_record.cpp.o.d"
  "/work/main/tests/unit/test_result_file.cpp" "tests/unit/CMakeFiles/gpuaccept-unit-tests.dir/test_result_file.cpp.o" "gcc" "tests/unit/CMakeFiles/gpuaccept-unit-tests.dir/test_result_file.cpp.o.d"
  "/work/main/tests/unit/test_slurm_env.cpp" "tests/unit/CMakeFiles/gpuaccept-unit-tests.dir/test_slurm_env.cpp.o" "gcc" "tests/unit/CMakeFiles/gpuaccept-unit-tests.dir/test_slurm_env.cpp.o.d"
  "/work/main/tests/unit/test_world_single.cpp" "tests/unit/CMakeFiles/gpuaccept-unit-tests.dir/test_world_single.cpp.o" "gcc" "tests/unit/CMakeFiles/gpuaccept-unit-tests.dir/test_world_single.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build-report/src/CMakeFiles/gpuaccept_core.dir/DependInfo.cmake"
  "/work/main/build-report/phases/CMakeFiles/gpuaccept_discover_checks.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
