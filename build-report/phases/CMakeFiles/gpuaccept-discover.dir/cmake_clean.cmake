file(REMOVE_RECURSE
  "../bin/gpuaccept-discover"
  "../bin/gpuaccept-discover.pdb"
  "CMakeFiles/gpuaccept-discover.dir/discover/inventory.cpp.o"
  "CMakeFiles/gpuaccept-discover.dir/discover/inventory.cpp.o.d"
  "CMakeFiles/gpuaccept-discover.dir/discover/inventory_table.cpp.o"
  "CMakeFiles/gpuaccept-discover.dir/discover/inventory_table.cpp.o.d"
  "CMakeFiles/gpuaccept-discover.dir/discover/main.cpp.o"
  "CMakeFiles/gpuaccept-discover.dir/discover/main.cpp.o.d"
  "CMakeFiles/gpuaccept-discover.dir/discover/node_checks.cpp.o"
  "CMakeFiles/gpuaccept-discover.dir/discover/node_checks.cpp.o.d"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/gpuaccept-discover.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
