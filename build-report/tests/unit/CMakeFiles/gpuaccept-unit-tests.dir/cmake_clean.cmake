file(REMOVE_RECURSE
  "../../bin/gpuaccept-unit-tests"
  "../../bin/gpuaccept-unit-tests.pdb"
  "CMakeFiles/gpuaccept-unit-tests.dir/main.cpp.o"
  "CMakeFiles/gpuaccept-unit-tests.dir/main.cpp.o.d"
  "CMakeFiles/gpuaccept-unit-tests.dir/test_config.cpp.o"
  "CMakeFiles/gpuaccept-unit-tests.dir/test_config.cpp.o.d"
  "CMakeFiles/gpuaccept-unit-tests.dir/test_discover_checks.cpp.o"
  "CMakeFiles/gpuaccept-unit-tests.dir/test_discover_checks.cpp.o.d"
  "CMakeFiles/gpuaccept-unit-tests.dir/test_record.cpp.o"
  "CMakeFiles/gpuaccept-unit-tests.dir/test_record.cpp.o.d"
  "CMakeFiles/gpuaccept-unit-tests.dir/test_result_file.cpp.o"
  "CMakeFiles/gpuaccept-unit-tests.dir/test_result_file.cpp.o.d"
  "CMakeFiles/gpuaccept-unit-tests.dir/test_slurm_env.cpp.o"
  "CMakeFiles/gpuaccept-unit-tests.dir/test_slurm_env.cpp.o.d"
  "CMakeFiles/gpuaccept-unit-tests.dir/test_world_single.cpp.o"
  "CMakeFiles/gpuaccept-unit-tests.dir/test_world_single.cpp.o.d"
  "gpuaccept-unit-tests_tests-b12d07c.cmake"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/gpuaccept-unit-tests.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
