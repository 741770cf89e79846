#include "model/profile.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "model/embedded_data.h"

namespace scalecast {
namespace {

// Full precision, so a stored profile reads back to the same doubles.
std::string Num(double v) { return absl::StrFormat("%.17g", v); }

}  // namespace

absl::string_view GenerationOf(absl::string_view family) {
  // Families that share an architecture (same SM design, same kernels) pool their parameters.
  static const auto* kGenerations = new std::map<std::string, std::string, std::less<>>{
      {"v100", "volta"},      {"a100", "ampere"},    {"a800", "ampere"},     {"h100", "hopper"},
      {"h200", "hopper"},     {"h800", "hopper"},    {"h20", "hopper"},      {"b200", "blackwell"},
      {"gb200", "blackwell"}, {"b300", "blackwell"}, {"gb300", "blackwell"}, {"mi250x", "cdna2"},
      {"mi300x", "cdna3"},    {"mi325x", "cdna3"},   {"mi350x", "cdna4"},    {"mi355x", "cdna4"}};
  auto it = kGenerations->find(family);
  return it == kGenerations->end() ? family : absl::string_view(it->second);
}

AcceleratorParams PriorFor(absl::string_view family) {
  // Priors by generation, from shared/data/microbench.md and gemm.csv (see AcceleratorParams):
  // gemm_eff from the MAMF maxima over the shape factor; attn_eff is the best attention kernel
  // on that hardware, forward + backward at long sequences, head dim 128: FA2 on A100 189-203 of
  // 312 TFLOP/s (0.62); FA3 / cuDNN on H100 ~600 forward and ~450 backward of 989 (0.55);
  // Blackwell cuDNN an estimate (0.50); CK flash attention on MI300X an estimate (0.35).
  const absl::string_view g = GenerationOf(family);
  AcceleratorParams p;
  if (g == "volta" || g == "ampere") {
    p.gemm_eff = 0.92;
    p.attn_eff = 0.62;
  } else if (g == "hopper") {
    p.gemm_eff = 0.86;
    p.attn_eff = 0.55;
  } else if (g == "cdna2" || g == "cdna3" || g == "cdna4") {
    p.gemm_eff = 0.55;  // MAMF 51.4 % on MI300X (TunableOp)
    p.attn_eff = 0.35;
  } else {
    p.gemm_eff = 0.82;  // Blackwell MAMF 73-78 %
    p.attn_eff = 0.50;
  }
  return p;
}

const AcceleratorParams& Profile::ForAccelerator(absl::string_view family) const {
  auto it = accelerators.find(family);
  if (it != accelerators.end()) return it->second;
  auto pooled = accelerators.find(GenerationOf(family));
  if (pooled != accelerators.end()) return pooled->second;
  static auto* const kPriors = new std::map<std::string, AcceleratorParams, std::less<>>;
  static absl::Mutex mu(absl::kConstInit);
  absl::MutexLock lock(&mu);
  auto prior = kPriors->find(family);
  if (prior == kPriors->end()) {
    prior = kPriors->emplace(std::string(family), PriorFor(family)).first;
  }
  return prior->second;
}

std::string Profile::ToText() const {
  std::string out = absl::StrCat("name = ", name, "\n");
  if (!description.empty()) absl::StrAppend(&out, "description = ", description, "\n");
  for (const auto& [k, v] : info) absl::StrAppend(&out, "info.", k, " = ", v, "\n");
  absl::StrAppend(&out, "global.comm_slowdown = ", Num(global.comm_slowdown), "\n");
  for (const auto& [f, p] : accelerators) {
    absl::StrAppend(&out, "accel.", f, ".gemm_eff = ", Num(p.gemm_eff), "\n");
    absl::StrAppend(&out, "accel.", f, ".fp8_gemm_ratio = ", Num(p.fp8_gemm_ratio), "\n");
    absl::StrAppend(&out, "accel.", f, ".attn_eff = ", Num(p.attn_eff), "\n");
    absl::StrAppend(&out, "accel.", f, ".hbm_eff = ", Num(p.hbm_eff), "\n");
  }
  absl::StrAppend(&out, "band.low_ratio = ", Num(band.low_ratio), "\n");
  absl::StrAppend(&out, "band.high_ratio = ", Num(band.high_ratio), "\n");
  if (band.max_gpus > 0) absl::StrAppend(&out, "band.max_gpus = ", band.max_gpus, "\n");
  for (const auto& [k, n] : band.seen) absl::StrAppend(&out, "band.seen.", k, " = ", n, "\n");
  absl::StrAppend(&out, "stack.overlap_eff = ", Num(stack.overlap_eff), "\n");
  absl::StrAppend(&out, "stack.eager_traffic = ", Num(stack.eager_traffic), "\n");
  absl::StrAppend(&out, "stack.compiled_traffic = ", Num(stack.compiled_traffic), "\n");
  absl::StrAppend(&out, "moe.grouped_gemm_ratio = ", Num(moe.grouped_gemm_ratio), "\n");
  absl::StrAppend(&out, "moe.a2a_eff = ", Num(moe.a2a_eff), "\n");
  absl::StrAppend(&out, "moe.layer_overhead_s = ", Num(moe.layer_overhead_s), "\n");
  return out;
}

absl::StatusOr<Profile> Profile::FromText(absl::string_view text) {
  Profile p;
  p.accelerators.clear();
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    absl::string_view line = raw;
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("profile line ", line_no, ": no '='"));
    }
    std::string key(absl::StripAsciiWhitespace(line.substr(0, eq)));
    absl::string_view value = absl::StripAsciiWhitespace(line.substr(eq + 1));
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("profile line ", line_no, ": ", key, ": ", why));
    };
    if (key == "name") {
      p.name = std::string(value);
      continue;
    }
    if (key == "description") {
      p.description = std::string(value);
      continue;
    }
    if (absl::StartsWith(key, "info.")) {
      p.info[key.substr(5)] = std::string(value);
      continue;
    }
    if (absl::StartsWith(key, "band.seen.") || key == "band.max_gpus") {
      int n = 0;
      if (!absl::SimpleAtoi(value, &n) || n < 1) return bad("not a positive integer");
      if (key == "band.max_gpus") {
        p.band.max_gpus = n;
      } else {
        p.band.seen[key.substr(10)] = n;
      }
      continue;
    }
    double v = 0;
    if (!absl::SimpleAtod(value, &v) || !(v > 0) || v > 10) return bad("not a number in (0, 10]");
    std::vector<std::string> parts = absl::StrSplit(key, '.');
    double* slot = nullptr;
    if (parts.size() == 2 && parts[0] == "global" && parts[1] == "comm_slowdown") {
      slot = &p.global.comm_slowdown;
    } else if (key == "band.low_ratio") {
      slot = &p.band.low_ratio;
    } else if (key == "band.high_ratio") {
      slot = &p.band.high_ratio;
    } else if (parts.size() == 3 && parts[0] == "accel") {
      auto [it, inserted] = p.accelerators.try_emplace(parts[1], PriorFor(parts[1]));
      AcceleratorParams& a = it->second;
      if (parts[2] == "gemm_eff") slot = &a.gemm_eff;
      if (parts[2] == "fp8_gemm_ratio") slot = &a.fp8_gemm_ratio;
      if (parts[2] == "attn_eff") slot = &a.attn_eff;
      if (parts[2] == "hbm_eff") slot = &a.hbm_eff;
    } else if (parts.size() == 2 && parts[0] == "stack") {
      if (parts[1] == "overlap_eff") slot = &p.stack.overlap_eff;
      if (parts[1] == "eager_traffic") slot = &p.stack.eager_traffic;
      if (parts[1] == "compiled_traffic") slot = &p.stack.compiled_traffic;
    } else if (parts.size() == 2 && parts[0] == "moe") {
      if (parts[1] == "grouped_gemm_ratio") slot = &p.moe.grouped_gemm_ratio;
      if (parts[1] == "a2a_eff") slot = &p.moe.a2a_eff;
      if (parts[1] == "layer_overhead_s") slot = &p.moe.layer_overhead_s;
    }
    if (slot == nullptr) return bad("unknown parameter");
    *slot = v;
  }
  return p;
}

const Profile& Profile::BuiltinDefault() {
  static const Profile* const kProfile = [] {
    absl::StatusOr<Profile> p = FromText(embedded::kDefaultProfileText);
    if (!p.ok()) std::abort();  // the build's own data file; profile_test guards it
    return new Profile(*std::move(p));
  }();
  return *kProfile;
}

std::vector<ParamRef> FittableParams(Profile* p, const std::vector<std::string>& families) {
  std::vector<ParamRef> refs;
  // NCCL kernels occupy 8-32 channels (one SM each) of 108-132 SMs while they run: 6-25 %.
  refs.push_back({"global.comm_slowdown", &p->global.comm_slowdown, 0.05, 0.25, 0.15});
  const StackParams prior_stack;
  refs.push_back({"stack.overlap_eff", &p->stack.overlap_eff, 0.3, 1.0, prior_stack.overlap_eff});
  refs.push_back(
      {"stack.eager_traffic", &p->stack.eager_traffic, 1.0, 5.0, prior_stack.eager_traffic});
  refs.push_back({"stack.compiled_traffic", &p->stack.compiled_traffic, 1.0, 3.0,
                  prior_stack.compiled_traffic});
  const MoeParams prior_moe;
  refs.push_back({"moe.grouped_gemm_ratio", &p->moe.grouped_gemm_ratio, 0.3, 1.0,
                  prior_moe.grouped_gemm_ratio});
  refs.push_back({"moe.a2a_eff", &p->moe.a2a_eff, 0.2, 1.0, prior_moe.a2a_eff});
  refs.push_back(
      {"moe.layer_overhead_s", &p->moe.layer_overhead_s, 1e-5, 0.02, prior_moe.layer_overhead_s});
  for (const std::string& f : families) {
    // Pulled toward the generation's pooled value where the profile has one, else its prior.
    const AcceleratorParams pool = p->ForAccelerator(f);
    auto [it, inserted] = p->accelerators.try_emplace(f, pool);
    AcceleratorParams& a = it->second;
    refs.push_back({"accel." + f + ".gemm_eff", &a.gemm_eff, 0.3, 1.0, pool.gemm_eff});
    refs.push_back(
        {"accel." + f + ".fp8_gemm_ratio", &a.fp8_gemm_ratio, 0.3, 1.0, pool.fp8_gemm_ratio});
    refs.push_back({"accel." + f + ".attn_eff", &a.attn_eff, 0.1, 0.9, pool.attn_eff});
    refs.push_back({"accel." + f + ".hbm_eff", &a.hbm_eff, 0.3, 0.95, pool.hbm_eff});
  }
  return refs;
}

}  // namespace scalecast
