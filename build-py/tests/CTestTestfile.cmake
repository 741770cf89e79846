# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/build-py/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/build-py/tests/catalog_test[1]_include.cmake")
include("/work/main/build-py/tests/workload_test[1]_include.cmake")
include("/work/main/build-py/tests/hardware_test[1]_include.cmake")
include("/work/main/build-py/tests/memory_test[1]_include.cmake")
include("/work/main/build-py/tests/predictor_test[1]_include.cmake")
include("/work/main/build-py/tests/planner_test[1]_include.cmake")
include("/work/main/build-py/tests/calibration_test[1]_include.cmake")
include("/work/main/build-py/tests/seed_claims_test[1]_include.cmake")
include("/work/main/build-py/tests/storage_test[1]_include.cmake")
include("/work/main/build-py/tests/server_test[1]_include.cmake")
