# CMake generated Testfile for 
# Source directory: /work/main/deploy
# Build directory: /work/main/build-deploy/deploy
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
