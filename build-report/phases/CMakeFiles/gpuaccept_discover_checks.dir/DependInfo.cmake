
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/phases/discover/inventory_table.cpp" "phases/CMakeFiles/gpuaccept_discover_checks.dir/discover/inventory_table.cpp.o" "gcc" "phases/CMakeFiles/gpuaccept_discover_checks.dir/discover/inventory_table.cpp.o.d"
  "/work/main/phases/discover/node_checks.cpp" "phases/CMakeFiles/gpuaccept_discover_checks.dir/discover/node_checks.cpp.o" "gcc" "phases/CMakeFiles/gpuaccept_discover_checks.dir/discover/node_checks.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build-report/src/CMakeFiles/gpuaccept_core.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
