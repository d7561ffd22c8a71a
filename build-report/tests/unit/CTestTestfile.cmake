# CMake generated Testfile for 
# Source directory: /work/main/tests/unit
# Build directory: /work/main/build-report/tests/unit
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/build-report/tests/unit/gpuaccept-unit-tests_include-b12d07c.cmake")
