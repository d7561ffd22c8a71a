# CMake generated Testfile for 
# Source directory: /work/main/tests/cluster
# Build directory: /work/main/build-report/tests/cluster
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
