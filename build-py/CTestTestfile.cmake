# CMake generated Testfile for 
# Source directory: /work/main
# Build directory: /work/main/build-py
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
subdirs("model")
subdirs("storage")
subdirs("proto")
subdirs("server")
subdirs("clients/cli")
subdirs("clients/python")
subdirs("tools")
subdirs("tests")
subdirs("deploy")
subdirs("bench")
