# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/build-report/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
subdirs("unit")
subdirs("cluster")
