# Empty dependencies file for gpuaccept_cuda.
# This may be replaced when dependencies are built.
