// A test's own directory: made fresh under the test temp dir (TEST_TMPDIR, else /tmp) and
// removed, with everything in it, when the object goes. Tests that write files (databases,
// token files, CLI inputs and outputs) keep them here, so a run leaves nothing behind.
#ifndef SCALECAST_TESTS_SCRATCH_DIR_H_
#define SCALECAST_TESTS_SCRATCH_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "gtest/gtest.h"

namespace scalecast::testing {

class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = ::testing::TempDir() + "/scalecast-test-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp " << tmpl << " failed";
      return;
    }
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // `name` inside the directory.
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace scalecast::testing

#endif  // SCALECAST_TESTS_SCRATCH_DIR_H_
