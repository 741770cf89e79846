# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/build-cli/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
include("/work/main/build-cli/tests/catalog_test[1]_include.cmake")
include("/work/main/build-cli/tests/workload_test[1]_include.cmake")
include("/work/main/build-cli/tests/hardware_test[1]_include.cmake")
include("/work/main/build-cli/tests/memory_test[1]_include.cmake")
include("/work/main/build-cli/tests/predictor_test[1]_include.cmake")
include("/work/main/build-cli/tests/planner_test[1]_include.cmake")
include("/work/main/build-cli/tests/calibration_test[1]_include.cmake")
include("/work/main/build-cli/tests/seed_claims_test[1]_include.cmake")
include("/work/main/build-cli/tests/storage_test[1]_include.cmake")
include("/work/main/build-cli/tests/server_test[1]_include.cmake")
