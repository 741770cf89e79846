// The command-line tools' run loader (tools/run_files.h): what scalecast-validate and
// scalecast-fewshot read before they fit or predict.
#include "tools/run_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace scalecast::tools {
namespace {

// A run file under gtest's temporary directory, named for this process.
std::string WriteRuns(const std::string& name, const std::string& text) {
  const std::string path =
      ::testing::TempDir() + "scalecast_" + std::to_string(getpid()) + "_" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

constexpr char kHeader[] =
    "id,source,framework,model,layers,hidden,heads,ffn_hidden,vocab,seq_len,accelerator,num_gpus,"
    "precision,tp,pp,dp,micro_batch,global_batch,tokens_per_s_per_gpu\n";

std::string Row(const std::string& id) {
  return id + ",s,megatron,m,8,1024,16,4096,32000,2048,h100-sxm-80gb,8,bf16,1,1,8,1,64,5000\n";
}

// data/ files once reused an id of another file (mosaicgpt-2022-12.csv's 6901-6909 against the
// first draft of megatron-bridge-cards-2026.csv): an annotation keyed by id would have applied
// to both runs. The loader names both places.
TEST(RunFiles, AnIdTwoRunsShareIsRefusedWithBothPlaces) {
  const std::string a = WriteRuns("runs_a.csv", std::string(kHeader) + Row("1") + Row("2"));
  const std::string b = WriteRuns("runs_b.csv", std::string(kHeader) + Row("3") + Row("2"));
  absl::StatusOr<std::vector<Measurement>> both = LoadRuns({a, b}, {});
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(both.status().message(),
            b + " line 3, column id: 2 is also the id of " + a +
                " line 3 (annotations keyed by id would apply to both runs)");
  const std::string c = WriteRuns("runs_c.csv", std::string(kHeader) + Row("4") + Row("4"));
  EXPECT_FALSE(LoadRuns({c}, {}).ok());
  absl::StatusOr<std::vector<Measurement>> distinct = LoadRuns({a}, {});
  ASSERT_TRUE(distinct.ok()) << distinct.status();
  EXPECT_EQ(distinct->size(), 2u);
}

}  // namespace
}  // namespace scalecast::tools
