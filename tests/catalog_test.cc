#include "model/catalog.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "model/embedded_data.h"
#include "model/workload.h"

namespace scalecast {
namespace {

TEST(Catalog, BuiltinHasEveryAcceleratorAndPreset) {
  const Catalog& c = Catalog::Builtin();
  for (const char* id : {"v100-sxm2-32gb", "v100-sxm3-32gb", "a100-sxm-40gb", "a100-sxm-80gb",
                         "h100-sxm-80gb", "h100-sxm-96gb-500w", "h100-pcie-80gb", "h200-sxm-141gb",
                         "b200-sxm-180gb", "gb200-nvl72", "gb300-nvl72", "mi300x-192gb"}) {
    const Accelerator* a = c.FindAccelerator(id);
    ASSERT_NE(a, nullptr) << id;
    EXPECT_GT(a->PeakFlops(Precision::kFp16), 0) << id;
    EXPECT_LT(a->idle_w, a->power_limit_w) << id;
    EXPECT_LE(a->power_limit_w, a->tdp_w) << id;
    EXPECT_GT(a->sms, 0) << id;
  }
  for (const char* id : {"llama2-1b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b",
                         "llama3-70b", "llama3-405b", "gpt3-175b", "mpt-7b", "mpt-30b", "mpt-70b",
                         "nemotron4-15b", "nemotron4-340b"}) {
    EXPECT_NE(c.FindModel(id), nullptr) << id;
  }
  EXPECT_EQ(c.FindAccelerator("tpu-v5"), nullptr);
  // Precision support follows the hardware generation.
  EXPECT_EQ(c.FindAccelerator("a100-sxm-80gb")->PeakFlops(Precision::kFp8), 0);
  EXPECT_EQ(c.FindAccelerator("v100-sxm2-32gb")->PeakFlops(Precision::kBf16), 0);
  EXPECT_GT(c.FindAccelerator("b200-sxm-180gb")->PeakFlops(Precision::kNvfp4), 0);
}

// Every physical number in the built-in catalog carries its source in a comment.
TEST(Catalog, EveryAcceleratorValueCitesItsSource) {
  bool in_accelerator = false;
  int checked = 0;
  for (absl::string_view line : absl::StrSplit(embedded::kCatalogText, '\n')) {
    absl::string_view body = absl::StripLeadingAsciiWhitespace(line);
    if (absl::StartsWith(body, "accelerator ")) in_accelerator = true;
    if (body == "end" || absl::StartsWith(body, "end ")) in_accelerator = false;
    if (!in_accelerator || body.find('=') == absl::string_view::npos || body[0] == '#') continue;
    if (absl::StartsWith(body, "name") || absl::StartsWith(body, "family")) continue;
    EXPECT_NE(body.find('#'), absl::string_view::npos) << "no source comment: " << line;
    ++checked;
  }
  EXPECT_GE(checked, 12 * 15);
}

TEST(Catalog, PresetShapesGiveTheirPublishedParameterCounts) {
  const Catalog& c = Catalog::Builtin();
  // Hugging Face parameter counts (embedding and output untied for Llama).
  struct Case {
    const char* id;
    double params;
  } cases[] = {{"llama2-7b", 6.738e9}, {"llama2-13b", 13.016e9}, {"llama2-70b", 68.977e9},
               {"llama3-8b", 8.030e9}, {"llama3-70b", 70.554e9}, {"llama3-405b", 405.85e9}};
  for (const Case& k : cases) {
    const ParamCount p = CountParams(Shape(c.FindModel(k.id)->spec));
    EXPECT_NEAR(p.total / k.params, 1.0, 0.005) << k.id;
  }
}

TEST(Catalog, UserFileAddsAndOverridesWithoutRebuilding) {
  Catalog c = Catalog::Builtin();
  const std::string extra = R"(
accelerator my-gpu   # a lab's own part
  name = Lab GPU
  family = h100
  peak_tflops_bf16 = 500
  peak_tflops_fp16 = 500
  hbm_gib = 64
  hbm_tbps = 2
  tdp_w = 500
  idle_w = 50
  gpus_per_node = 4
  nvlink_domain = 4
  nvlink_gbps = 200
  net_gbps = 200
  sms = 100
end
model tiny
  layers = 2
  hidden = 256
  heads = 4
  ffn_hidden = 1024
  mlp = plain
  vocab = 1000
end
)";
  ASSERT_TRUE(c.MergeText(extra).ok());
  ASSERT_NE(c.FindAccelerator("my-gpu"), nullptr);
  EXPECT_EQ(c.FindAccelerator("my-gpu")->power_limit_w, 500);  // defaults to tdp
  EXPECT_EQ(c.FindModel("tiny")->spec.kv_heads, 4);            // defaults to heads
  EXPECT_NE(c.FindAccelerator("h100-sxm-80gb"), nullptr);      // built-ins stay
}

TEST(Catalog, BadFileIsRejectedWholeWithItsLine) {
  Catalog c = Catalog::Builtin();
  const size_t before = c.accelerators().size();
  const std::string bad =
      "model ok\n layers = 2\n hidden = 256\n heads = 4\n ffn_hidden = 1024\n mlp = plain\n"
      " vocab = 1000\nend\nmodel broken\n layers = two\nend\n";
  absl::Status s = c.MergeText(bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("line 10"), absl::string_view::npos) << s;
  EXPECT_EQ(c.FindModel("ok"), nullptr);  // nothing merged
  EXPECT_EQ(c.accelerators().size(), before);
  EXPECT_FALSE(c.MergeText("accelerator x\n name = y\n").ok());  // no end
  EXPECT_FALSE(c.MergeText("model m\n heads = 3\n hidden = 10\n layers = 1\n ffn_hidden = 4\n"
                           " mlp = plain\n vocab = 5\nend\n")
                   .ok());  // heads do not divide hidden
  EXPECT_FALSE(c.MergeText("model m\n colour = red\nend\n").ok());
}

}  // namespace
}  // namespace scalecast
