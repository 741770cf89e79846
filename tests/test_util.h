// Helpers shared by the model tests.
#ifndef SCALECAST_TESTS_TEST_UTIL_H_
#define SCALECAST_TESTS_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "model/measurements.h"
#include "model/types.h"
#include "tools/run_files.h"

namespace scalecast::testing {

// What is unphysical in a prediction, in words; empty when nothing is: step time, throughput,
// MFU, compute, watts and energy positive and finite; recompute, bubble, optimizer and every
// collective at least 0, no collective exposed beyond its total, the parts within the step; HFU
// at least MFU; no memory part below 0; the value inside its band.
inline std::vector<std::string> Unphysical(const Prediction& p) {
  std::vector<std::string> out;
  const auto positive = [&](double v, absl::string_view what) {
    if (!std::isfinite(v) || v <= 0) out.push_back(absl::StrCat(what, " = ", v));
  };
  const auto non_negative = [&](double v, absl::string_view what) {
    if (!std::isfinite(v) || v < 0) out.push_back(absl::StrCat(what, " = ", v));
  };
  positive(p.step_time_s, "step time");
  positive(p.tokens_per_s_per_gpu, "tokens/s per GPU");
  positive(p.mfu, "MFU");
  positive(p.time.compute_s, "compute");
  positive(p.power.watts_per_gpu, "watts per GPU");
  positive(p.power.joules_per_token, "joules per token");
  non_negative(p.time.recompute_s, "recompute");
  non_negative(p.time.pipeline_bubble_s, "bubble");
  non_negative(p.time.optimizer_s, "optimizer");
  double parts =
      p.time.compute_s + p.time.recompute_s + p.time.pipeline_bubble_s + p.time.optimizer_s;
  for (const CommTime& c : p.time.comm) {
    non_negative(c.total_s, c.kind);
    non_negative(c.exposed_s, c.kind);
    if (c.exposed_s > c.total_s * (1 + 1e-9)) out.push_back(c.kind + " exposed above its total");
    if (c.bytes_per_gpu < 0) out.push_back(c.kind + " bytes below 0");
    parts += c.exposed_s;
  }
  if (parts > p.step_time_s * 1.02) out.push_back(absl::StrCat("parts sum to ", parts));
  if (p.hfu < p.mfu) out.push_back(absl::StrCat("HFU ", p.hfu, " below MFU ", p.mfu));
  const MemoryBreakdown& m = p.memory;
  if (m.total_bytes <= 0 || std::min({m.weights_bytes, m.gradients_bytes, m.optimizer_bytes,
                                      m.activations_bytes, m.other_bytes}) < 0) {
    out.push_back("a memory part below 0");
  }
  if (!(p.uncertainty.low <= p.tokens_per_s_per_gpu &&
        p.tokens_per_s_per_gpu <= p.uncertainty.high)) {
    out.push_back("the value outside its band");
  }
  return out;
}

inline std::string ReadShared(const std::string& name) {
  std::ifstream in(std::string(SCALECAST_SHARED_DATA) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

#ifdef SCALECAST_SOURCE_DIR
inline std::string ReadSource(const std::string& path) {
  std::ifstream in(std::string(SCALECAST_SOURCE_DIR) + "/" + path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The paths a list file of data/ names (data/annotation-files.txt, data/run-files.txt), one a
// line; blank lines and "#" comments skipped. scripts/lib.sh reads the same files.
inline std::vector<std::string> ListFiles(const std::string& list) {
  std::vector<std::string> paths;
  std::istringstream in(ReadSource(list));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && line[0] != '#') paths.push_back(line);
  }
  EXPECT_FALSE(paths.empty()) << list;
  return paths;
}

// Measured runs as scripts/accuracy.sh reads them, through the tools' own loader (a CSV id two
// runs share is refused there): the CSVs (a shared file by name, or a path under the
// repository's data/), then every annotation file of data/annotation-files.txt in its order.
inline std::vector<Measurement> LoadRuns(const std::vector<std::string>& csvs) {
  std::vector<std::string> paths, annotations;
  for (const std::string& f : csvs) {
    const bool own = f.rfind("data/", 0) == 0;
    paths.push_back(absl::StrCat(own ? SCALECAST_SOURCE_DIR : SCALECAST_SHARED_DATA, "/", f));
  }
  for (const std::string& f : ListFiles("data/annotation-files.txt")) {
    annotations.push_back(absl::StrCat(SCALECAST_SOURCE_DIR, "/", f));
  }
  absl::StatusOr<std::vector<Measurement>> runs = tools::LoadRuns(paths, annotations);
  EXPECT_TRUE(runs.ok()) << runs.status();
  return runs.ok() ? *std::move(runs) : std::vector<Measurement>{};
}

// The runs added under data/ with their citations (data/run-files.txt).
inline std::vector<std::string> EraRunFiles() { return ListFiles("data/run-files.txt"); }
#endif  // SCALECAST_SOURCE_DIR

// The seed study's setting: Llama-2, seq 4096, 4096 sequences a step, 8 GPUs a node.
inline Scenario StudyScenario(const std::string& model, const std::string& accelerator, int gpus) {
  Scenario s;
  s.workload.model.name = model;
  s.workload.seq_len = 4096;
  s.workload.global_batch = 4096;
  s.workload.precision = Precision::kBf16;
  s.cluster.accelerator = accelerator;
  s.cluster.num_gpus = gpus;
  s.cluster.gpus_per_node = 8;
  return s;
}

// A dense decoder shape (the fields every test sets; the rest left at their defaults).
inline ModelSpec DenseModel(const char* name, int layers, int hidden, int heads, int kv_heads,
                            int ffn_hidden, Mlp mlp, int vocab) {
  ModelSpec m;
  m.name = name;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn_hidden = ffn_hidden;
  m.mlp = mlp;
  m.vocab = vocab;
  return m;
}

// A complete single-GPU-axis layout (tp = pp = vpp = cp = 1, dp derived) with the given
// sharding, micro batch and recompute: the model tests' usual fixed layout.
inline Parallelism DataParallelLayout(Sharding sharding, int micro_batch, Recompute recompute) {
  Parallelism p;
  p.tp = p.pp = p.vpp = p.cp = 1;
  p.sharding = sharding;
  p.micro_batch = micro_batch;
  p.recompute = recompute;
  p.sequence_parallel = false;
  return p;
}

// A complete Megatron-style expert-parallel layout: tp, pp, vpp and ep as given, cp = etp = 1,
// micro batch 1, ZeRO-1 (the distributed optimizer), dp derived.
inline Parallelism ExpertLayout(int tp, int pp, int vpp, int ep, Recompute recompute) {
  Parallelism p;
  p.tp = tp;
  p.pp = pp;
  p.vpp = vpp;
  p.cp = 1;
  p.ep = ep;
  p.etp = 1;
  p.micro_batch = 1;
  p.sharding = Sharding::kZero1;
  p.recompute = recompute;
  return p;
}

}  // namespace scalecast::testing

#endif  // SCALECAST_TESTS_TEST_UTIL_H_
