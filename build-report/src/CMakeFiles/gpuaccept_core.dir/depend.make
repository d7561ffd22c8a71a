# Empty dependencies file for gpuaccept_core.
# This may be replaced when dependencies are built.
