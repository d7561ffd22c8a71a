# Empty dependencies file for gpuaccept-unit-tests.
# This may be replaced when dependencies are built.
