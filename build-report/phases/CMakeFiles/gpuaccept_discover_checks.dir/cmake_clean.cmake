file(REMOVE_RECURSE
  "CMakeFiles/gpuaccept_discover_checks.dir/discover/inventory_table.cpp.o"
  "CMakeFiles/gpuaccept_discover_checks.dir/discover/inventory_table.cpp.o.d"
  "CMakeFiles/gpuaccept_discover_checks.dir/discover/node_checks.cpp.o"
  "CMakeFiles/gpuaccept_discover_checks.dir/discover/node_checks.cpp.o.d"
  "libgpuaccept_discover_checks.a"
  "libgpuaccept_discover_checks.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/gpuaccept_discover_checks.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
