# Empty dependencies file for gpuaccept-discover.
# This may be replaced when dependencies are built.
