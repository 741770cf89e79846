# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/build-deploy/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/build-deploy/tests/catalog_test[1]_include.cmake")
include("/work/main/build-deploy/tests/workload_test[1]_include.cmake")
include("/work/main/build-deploy/tests/hardware_test[1]_include.cmake")
include("/work/main/build-deploy/tests/memory_test[1]_include.cmake")
include("/work/main/build-deploy/tests/predictor_test[1]_include.cmake")
include("/work/main/build-deploy/tests/planner_test[1]_include.cmake")
include("/work/main/build-deploy/tests/calibration_test[1]_include.cmake")
include("/work/main/build-deploy/tests/seed_claims_test[1]_include.cmake")
include("/work/main/build-deploy/tests/storage_test[1]_include.cmake")
include("/work/main/build-deploy/tests/server_test[1]_include.cmake")
