#include "model/workload.h"

#include "gtest/gtest.h"
#include "model/catalog.h"
#include "tests/test_util.h"

namespace scalecast {
namespace {

TEST(Workload, FlopsPerTokenAreSixNPlusCausalAttention) {
  // Llama-2-7B by hand from its config: per layer q,k,v,o 4*h^2 and SwiGLU 3*h*f; the output
  // projection v*h; the input embedding is a lookup, not a matmul.
  const double h = 4096, f = 11008, l = 32, v = 32000, s = 4096;
  const double n = l * (4 * h * h + 3 * h * f) + v * h;
  const double attention = 6 * l * s * h;  // 12*l*s*h halved by the causal mask
  const Shape shape(Catalog::Builtin().FindModel("llama2-7b")->spec);
  EXPECT_NEAR(ModelFlopsPerToken(shape, 4096) / (6 * n + attention), 1.0, 0.01);
}

TEST(Workload, GroupedQueryAttentionShrinksOnlyKeyAndValue) {
  ModelSpec mha = testing::DenseModel("m", 2, 1024, 16, 16, 4096, Mlp::kGated, 1000);
  ModelSpec gqa = mha;
  gqa.kv_heads = 4;
  const ParamCount a = CountParams(Shape(mha)), b = CountParams(Shape(gqa));
  // k and v projections: 2 * h * (kv_heads * head_dim) per layer.
  EXPECT_DOUBLE_EQ(a.per_layer - b.per_layer, 2.0 * 1024 * (16 - 4) * 64);
}

TEST(Workload, PlainMlpHasTwoMatricesGatedThree) {
  ModelSpec gated = testing::DenseModel("m", 1, 1024, 16, 16, 4096, Mlp::kGated, 1000);
  ModelSpec plain = gated;
  plain.mlp = Mlp::kPlain;
  EXPECT_DOUBLE_EQ(CountParams(Shape(gated)).per_layer - CountParams(Shape(plain)).per_layer,
                   1024.0 * 4096);
}

TEST(Workload, AttentionTermGrowsWithSequence) {
  const Shape shape(Catalog::Builtin().FindModel("llama3-8b")->spec);
  EXPECT_GT(ModelFlopsPerToken(shape, 32768), 1.5 * ModelFlopsPerToken(shape, 2048));
}

}  // namespace
}  // namespace scalecast
