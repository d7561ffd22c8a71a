# Empty dependencies file for gpuaccept_discover_checks.
# This may be replaced when dependencies are built.
