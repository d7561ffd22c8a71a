file(REMOVE_RECURSE
  "CMakeFiles/gpuaccept_cuda.dir/cuda/cuda_check.cpp.o"
  "CMakeFiles/gpuaccept_cuda.dir/cuda/cuda_check.cpp.o.d"
  "CMakeFiles/gpuaccept_cuda.dir/cuda/nccl_comm.cpp.o"
  "CMakeFiles/gpuaccept_cuda.dir/cuda/nccl_comm.cpp.o.d"
  "libgpuaccept_cuda.a"
  "libgpuaccept_cuda.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/gpuaccept_cuda.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
