#include "model/profile.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "model/embedded_data.h"

namespace scalecast {
namespace {

// Priors by family, from shared/data/microbench.md (see AcceleratorParams).
AcceleratorParams PriorFor(absl::string_view family) {
  AcceleratorParams p;
  if (family == "v100" || family == "a100") {
    p.gemm_eff = 0.92;
    p.attn_eff = 0.60;
  } else if (family == "h100" || family == "h200") {
    p.gemm_eff = 0.86;
    p.attn_eff = 0.34;  // FA2 on Hopper; FA3 reaches ~0.6 forward
  } else if (family == "mi300x") {
    p.gemm_eff = 0.55;  // MAMF 51.4 % (TunableOp)
    p.attn_eff = 0.30;
  } else {
    p.gemm_eff = 0.82;  // Blackwell MAMF 73-78 %
    p.attn_eff = 0.40;
  }
  return p;
}

// Full precision, so a stored profile reads back to the same doubles.
std::string Num(double v) { return absl::StrFormat("%.17g", v); }

}  // namespace

const std::vector<std::string>& KnownFrameworks() {
  static const auto* kNames = new std::vector<std::string>{
      "",          "megatron",           "nemo",   "torchtitan", "composer-fsdp", "fms-fsdp",
      "deepspeed", "megatron-deepspeed", "maxtext"};
  return *kNames;
}

absl::string_view FrameworkFamily(absl::string_view f) {
  if (f == "torchtitan" || f == "composer-fsdp" || f == "fms-fsdp") return "pytorch-fsdp";
  if (f == "megatron" || f == "nemo" || f == "megatron-deepspeed") return "megatron";
  if (f == "deepspeed") return "deepspeed";
  if (f == "maxtext") return "jax";
  return "generic";
}

const FrameworkCapabilities& CapabilitiesOf(absl::string_view f) {
  using S = Sharding;
  static const auto* kCaps = [] {
    auto* m = new std::map<std::string, FrameworkCapabilities, std::less<>>;
    // Megatron-LM / Megatron-Core (and NeMo on it): TP with SP, PP with interleaving, CP; data
    // parallelism is DDP or the distributed optimizer (ZeRO-1).
    FrameworkCapabilities megatron;
    megatron.shardings = megatron.pipeline_shardings = {S::kDdp, S::kZero1};
    (*m)["megatron"] = (*m)["nemo"] = megatron;
    // Megatron-DeepSpeed: Megatron's TP/PP with DeepSpeed's ZeRO-1 (ZeRO-2/3 without PP).
    FrameworkCapabilities mds;
    mds.context_parallel = false;
    mds.shardings = {S::kDdp, S::kZero1, S::kZero2, S::kFsdp};
    mds.pipeline_shardings = {S::kDdp, S::kZero1};
    (*m)["megatron-deepspeed"] = mds;
    // torchtitan: FSDP2 (or HSDP/DDP) with TP, PP (incl. interleaved schedules) and CP.
    FrameworkCapabilities titan;
    titan.shardings = titan.pipeline_shardings = {S::kDdp, S::kFsdp, S::kHsdp};
    (*m)["torchtitan"] = titan;
    // llm-foundry/Composer and IBM fms-fsdp: PyTorch FSDP (FULL_SHARD, HYBRID_SHARD,
    // SHARD_GRAD_OP for Composer) or DDP; no model parallelism.
    FrameworkCapabilities fsdp_only;
    fsdp_only.tensor_parallel = fsdp_only.pipeline_parallel = false;
    fsdp_only.interleaved_pipeline = fsdp_only.context_parallel = false;
    fsdp_only.shardings = {S::kDdp, S::kZero2, S::kFsdp, S::kHsdp};
    fsdp_only.pipeline_shardings = {};
    (*m)["composer-fsdp"] = fsdp_only;
    fsdp_only.shardings = {S::kDdp, S::kFsdp, S::kHsdp};
    (*m)["fms-fsdp"] = fsdp_only;
    // DeepSpeed: ZeRO stages 1-3; its pipeline engine takes ZeRO-1 at most; no TP or CP of its
    // own (Ulysses sequence parallelism is not modelled).
    FrameworkCapabilities ds;
    ds.tensor_parallel = ds.context_parallel = ds.interleaved_pipeline = false;
    ds.shardings = {S::kDdp, S::kZero1, S::kZero2, S::kFsdp};
    ds.pipeline_shardings = {S::kDdp, S::kZero1};
    (*m)["deepspeed"] = ds;
    // MaxText (JAX): FSDP-style and data sharding with tensor, pipeline and context axes.
    FrameworkCapabilities maxtext;
    maxtext.interleaved_pipeline = false;
    maxtext.shardings = maxtext.pipeline_shardings = {S::kDdp, S::kFsdp, S::kHsdp};
    (*m)["maxtext"] = maxtext;
    return m;
  }();
  static const FrameworkCapabilities kGeneric;
  auto it = kCaps->find(f);
  return it == kCaps->end() ? kGeneric : it->second;
}

const AcceleratorParams& Profile::ForAccelerator(absl::string_view family) const {
  auto it = accelerators.find(family);
  if (it != accelerators.end()) return it->second;
  static const auto* kPriors = [] {
    auto* m = new std::map<std::string, AcceleratorParams, std::less<>>;
    for (const char* f : {"v100", "a100", "h100", "h200", "b200", "gb200", "gb300", "mi300x"}) {
      (*m)[f] = PriorFor(f);
    }
    return m;
  }();
  auto prior = kPriors->find(family);
  if (prior != kPriors->end()) return prior->second;
  static const AcceleratorParams kGeneric = PriorFor("");
  return kGeneric;
}

const FrameworkParams& Profile::ForFramework(absl::string_view family) const {
  auto it = frameworks.find(family);
  if (it != frameworks.end()) return it->second;
  // A family the profile was not fitted on uses the generic family's values.
  auto generic = frameworks.find("generic");
  if (generic != frameworks.end()) return generic->second;
  static const FrameworkParams kDefault;
  return kDefault;
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
  for (const auto& [f, p] : frameworks) {
    absl::StrAppend(&out, "framework.", f, ".compute_eff = ", Num(p.compute_eff), "\n");
    absl::StrAppend(&out, "framework.", f, ".overlap_eff = ", Num(p.overlap_eff), "\n");
  }
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
    double v = 0;
    if (!absl::SimpleAtod(value, &v) || !(v > 0) || v > 10) return bad("not a number in (0, 10]");
    std::vector<std::string> parts = absl::StrSplit(key, '.');
    double* slot = nullptr;
    if (parts.size() == 2 && parts[0] == "global" && parts[1] == "comm_slowdown") {
      slot = &p.global.comm_slowdown;
    } else if (parts.size() == 3 && parts[0] == "accel") {
      auto [it, inserted] = p.accelerators.try_emplace(parts[1], PriorFor(parts[1]));
      AcceleratorParams& a = it->second;
      if (parts[2] == "gemm_eff") slot = &a.gemm_eff;
      if (parts[2] == "fp8_gemm_ratio") slot = &a.fp8_gemm_ratio;
      if (parts[2] == "attn_eff") slot = &a.attn_eff;
      if (parts[2] == "hbm_eff") slot = &a.hbm_eff;
    } else if (parts.size() == 3 && parts[0] == "framework") {
      FrameworkParams& f = p.frameworks[parts[1]];
      if (parts[2] == "compute_eff") slot = &f.compute_eff;
      if (parts[2] == "overlap_eff") slot = &f.overlap_eff;
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

std::vector<ParamRef> FittableParams(Profile* p, const std::vector<std::string>& families,
                                     const std::vector<std::string>& framework_families) {
  std::vector<ParamRef> refs;
  // NCCL kernels occupy 8-32 channels (one SM each) of 108-132 SMs while they run: 6-25 %.
  refs.push_back({"global.comm_slowdown", &p->global.comm_slowdown, 0.05, 0.25, 0.15});
  for (const std::string& f : families) {
    auto [it, inserted] = p->accelerators.try_emplace(f, PriorFor(f));
    AcceleratorParams& a = it->second;
    const AcceleratorParams prior = PriorFor(f);
    refs.push_back({"accel." + f + ".gemm_eff", &a.gemm_eff, 0.3, 1.0, prior.gemm_eff});
    refs.push_back(
        {"accel." + f + ".fp8_gemm_ratio", &a.fp8_gemm_ratio, 0.3, 1.0, prior.fp8_gemm_ratio});
    refs.push_back({"accel." + f + ".attn_eff", &a.attn_eff, 0.1, 0.9, prior.attn_eff});
    refs.push_back({"accel." + f + ".hbm_eff", &a.hbm_eff, 0.3, 0.95, prior.hbm_eff});
  }
  for (const std::string& f : framework_families) {
    FrameworkParams& fp = p->frameworks[f];
    refs.push_back({"framework." + f + ".compute_eff", &fp.compute_eff, 0.5, 1.5, 1.0});
    refs.push_back({"framework." + f + ".overlap_eff", &fp.overlap_eff, 0.2, 1.0, 0.9});
  }
  return refs;
}

}  // namespace scalecast
