#include "model/profile.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "model/embedded_data.h"
#include "model/framework.h"
#include "model/status_macros.h"

namespace scalecast {
namespace {

// Full precision, so a stored profile reads back to the same doubles.
std::string Num(double v) { return absl::StrFormat("%.17g", v); }

// The accelerator family or generation a parameter key names ("accel.h100.gemm_eff" -> "h100"),
// as FittableParams needs it to list that family's parameters; none for other keys.
std::vector<std::string> FamiliesOf(absl::string_view key) {
  for (absl::string_view prefix : {"accel.", "maturity."}) {
    if (!absl::StartsWith(key, prefix)) continue;
    const size_t last = key.rfind('.');
    if (last <= prefix.size()) return {};
    return {std::string(key.substr(prefix.size(), last - prefix.size()))};
  }
  return {};
}

// Parameters an earlier model had and this one prices otherwise, with what replaced them. A
// stored full profile that names one still loads (the line is kept as info.retired.<key>, the
// parameter that replaced it at its prior); a layer that changes one is refused when applied,
// since its other changes were fitted together with it.
struct Retired {
  absl::string_view key;
  absl::string_view replaced_by;
};
constexpr Retired kRetiredParams[] = {
    {"moe.grouped_gemm_ratio",
     "moe.grouped_gemm_krows (2026-12: a grouped GEMM's cost is rows a group, and one expert a GPU "
     "is one GEMM)"},
    {"moe.overlap_layer_overhead_s",
     "moe.overlap_chunk_overhead_s (2026-12: the 1F1B overlap's host cost is a schedule plan a "
     "model chunk, its layers launching as without it)"},
};
const Retired* RetiredParam(absl::string_view key) {
  for (const Retired& r : kRetiredParams) {
    if (r.key == key) return &r;
  }
  return nullptr;
}

// "change.<key> = <old> <new> <runs> <evidence...>".
absl::StatusOr<ParameterChange> ParseChange(absl::string_view key, absl::string_view value) {
  ParameterChange c;
  c.key = std::string(key);
  std::vector<absl::string_view> parts =
      absl::StrSplit(value, absl::MaxSplits(absl::ByAnyChar(" \t"), 3), absl::SkipEmpty());
  if (parts.size() < 3) return absl::InvalidArgumentError("want '<old> <new> <runs> [evidence]'");
  if (!absl::SimpleAtod(parts[0], &c.old_value) || !(c.old_value > 0) || c.old_value > 10 ||
      !absl::SimpleAtod(parts[1], &c.new_value) || !(c.new_value > 0) || c.new_value > 10) {
    return absl::InvalidArgumentError("old and new values must be numbers in (0, 10]");
  }
  if (!absl::SimpleAtoi(parts[2], &c.runs) || c.runs < 0) {
    return absl::InvalidArgumentError("runs must be a count");
  }
  if (parts.size() == 4) c.evidence = std::string(absl::StripAsciiWhitespace(parts[3]));
  return c;
}

}  // namespace

absl::string_view GenerationOf(absl::string_view family) {
  // Families that share an architecture (same SM design, same kernels) pool their parameters.
  // A flat table: every prediction looks its accelerator's generation up several times.
  struct Entry {
    absl::string_view family, generation;
  };
  static constexpr Entry kGenerations[] = {
      {"v100", "volta"},      {"a100", "ampere"},    {"a800", "ampere"},     {"h100", "hopper"},
      {"h200", "hopper"},     {"h800", "hopper"},    {"h20", "hopper"},      {"b200", "blackwell"},
      {"gb200", "blackwell"}, {"b300", "blackwell"}, {"gb300", "blackwell"}, {"mi250x", "cdna2"},
      {"mi300x", "cdna3"},    {"mi325x", "cdna3"},   {"mi350x", "cdna4"},    {"mi355x", "cdna4"}};
  for (const Entry& e : kGenerations) {
    if (e.family == family) return e.generation;
  }
  return family;
}

double GenerationLaunch(absl::string_view generation) {
  // Volume availability: V100 (Tesla V100 shipping Q3 2017); A100 (GTC 2020 keynote, 2020-05-14:
  // "in full production and shipping"); H100 (GTC Fall 2022, 2022-09-20: "in full production",
  // partner systems from October); Blackwell (B200/GB200 systems shipping December 2024, NVIDIA
  // Q4 FY2025 results); MI250X (November 2021), MI300X (AMD Advancing AI, 2023-12-06), MI355X
  // (AMD Advancing AI, 2025-06-12).
  // Google's TPUs have no curve (0): Google trains on each generation with its own XLA:TPU
  // compiler before Cloud customers get it (TPU v4: "Deployed since 2020", Jouppi et al., ISCA
  // 2023, two years before Cloud TPU v4 Pods opened in May 2022), so the software a customer
  // runs has matured on the part already; MaxText's first v5e runs, two months after its Cloud
  // preview, reached 56-67 % MFU (data/maxtext-tpu.csv).
  struct Entry {
    absl::string_view generation;
    double launch;
  };
  static constexpr Entry kLaunch[] = {
      {"volta", 2017.6},  {"ampere", 2020.37}, {"hopper", 2022.79}, {"blackwell", 2024.96},
      {"cdna2", 2021.87}, {"cdna3", 2023.96},  {"cdna4", 2025.46}};
  for (const Entry& e : kLaunch) {
    if (e.generation == generation) return e.launch;
  }
  return 0.0;
}

double MaturityParams::DeficitOf(absl::string_view generation) const {
  auto it = deficit.find(generation);
  return it == deficit.end() ? kMaturityDeficitPrior : it->second;
}

double MaturityParams::Factor(absl::string_view generation, double software_date) const {
  const double launch = GenerationLaunch(generation);
  if (launch <= 0) return 1.0;
  const double date = software_date > 0 ? software_date : NewestSoftwareDate();
  const double age = std::max(0.0, date - launch);
  return 1.0 - DeficitOf(generation) * std::exp(-age / std::max(years, 1e-3));
}

AcceleratorParams PriorFor(absl::string_view family) {
  // Priors by generation, from shared/data/microbench.md and gemm.csv (see AcceleratorParams):
  // gemm_eff from the MAMF maxima over the shape factor (a fit scales a generation it has no runs
  // of by what the others keep of theirs: model/calibration.cc PoolUnseenGenerations); attn_eff is
  // the best attention kernel on that hardware, forward + backward at long sequences, head dim 128:
  // FA2 on A100 189-203 of 312 TFLOP/s (0.62); FA3 / cuDNN on H100 ~600 forward and ~450 backward
  // of 989 (0.55); Blackwell cuDNN an estimate (0.50); CK flash attention on MI300X an estimate
  // (0.35).
  const absl::string_view g = GenerationOf(family);
  AcceleratorParams p;
  if (g == "volta" || g == "ampere") {
    p.gemm_eff = 0.92;
    p.attn_eff = 0.62;
  } else if (g == "hopper") {
    p.gemm_eff = 0.86;
    p.attn_eff = 0.55;
  } else if (g == "cdna2") {
    // MAMF 147.0 of 191.5 TFLOP/s on one MI250X GCD (76.8 %, ROCm 6.2; shared/data/gemm.csv
    // row 27) over the ~0.93 shape factor of the MAMF shapes the priors above divide by (A100
    // 85.9 % -> 0.92, MI300X 51.4 % -> 0.55): its own matrix cores and libraries, not MI300X's.
    p.gemm_eff = 0.82;
    p.attn_eff = 0.35;
  } else if (g == "cdna3") {
    p.gemm_eff = 0.55;  // MAMF 51.4 % on MI300X (TunableOp)
    p.attn_eff = 0.35;
  } else if (g == "cdna4") {
    // MAMF 1565 TFLOP/s on MI355X (gemm.csv row 10, ROCm 7.0, no TunableOp): 62.2 % of the
    // catalog's 2516.6 over the shape factor at its 12288 x 8192 x 8192 shape (0.885, 256 CUs).
    p.gemm_eff = 0.70;
    p.attn_eff = 0.35;
  } else if (g == "gaudi2" || g == "gaudi3") {
    // No shape knee (sms omitted: two or eight large MMEs). The MAMF fraction (shared/data/
    // gemm.csv, torch.mm in lazy mode: Gaudi 2 418.7 of 432 bf16 and 826.5 of 865 fp8, rows 1
    // and 13; Gaudi 3 1243.0 of the catalog's 1835 bf16 and 1289.5 fp8, rows 8 and 15, the
    // table's 1677 being the 1,600 MHz MME clock). No attention
    // benchmark of Habana's fused SDPA was found: AMD's estimate, the other non-CUDA flash
    // attention.
    p.gemm_eff = g == "gaudi2" ? 0.969 : 0.677;
    p.fp8_gemm_ratio = g == "gaudi2" ? 0.99 : 1.04;
    p.attn_eff = 0.35;
  } else if (g == "trainium" || g == "trainium2") {
    // AWS's NKI matmul tutorial (aws-neuron-sdk @cae56ac0 general/nki/tutorials/
    // matrix_multiplication.rst): a bf16 [4096,8192] x [8192,8192] GEMM in 6.97 ms on one Trn1
    // NeuronCore, 78.9 TFLOP/s of its 95 (half the chip's 190).
    // Trainium2 has no public benchmark: Trn1's. Attention: AMD's estimate (no NKI figure).
    p.gemm_eff = 0.83;
    p.attn_eff = 0.35;
  } else if (absl::StartsWith(g, "tpu-")) {
    // No public matmul or attention microbenchmark of a TPU was found: Hopper's priors, the
    // other mature 16-bit systolic-array generation; MaxText's own runs fit v4, v5e and v5p.
    p.gemm_eff = 0.86;
    p.attn_eff = 0.55;
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
  if (IsLayer()) {
    absl::StrAppend(&out, "base = ", base, "\n");
    for (const ParameterChange& c : changes) {
      absl::StrAppend(&out, "change.", c.key, " = ", Num(c.old_value), " ", Num(c.new_value), " ",
                      c.runs, c.evidence.empty() ? "" : " ", c.evidence, "\n");
    }
    return out;
  }
  absl::StrAppend(&out, "global.comm_slowdown = ", Num(global.comm_slowdown), "\n");
  absl::StrAppend(&out, "global.step_host_s = ", Num(global.step_host_s), "\n");
  absl::StrAppend(&out, "global.step_sync_s = ", Num(global.step_sync_s), "\n");
  absl::StrAppend(&out, "global.layer_host_s = ", Num(global.layer_host_s), "\n");
  absl::StrAppend(&out, "global.ssd_kflops_per_sm_clock = ", Num(global.ssd_kflops_per_sm_clock),
                  "\n");
  for (const auto& [f, p] : accelerators) {
    absl::StrAppend(&out, "accel.", f, ".gemm_eff = ", Num(p.gemm_eff), "\n");
    absl::StrAppend(&out, "accel.", f, ".fp8_gemm_ratio = ", Num(p.fp8_gemm_ratio), "\n");
    absl::StrAppend(&out, "accel.", f, ".attn_eff = ", Num(p.attn_eff), "\n");
    absl::StrAppend(&out, "accel.", f, ".hbm_eff = ", Num(p.hbm_eff), "\n");
  }
  absl::StrAppend(&out, "maturity.years = ", Num(maturity.years), "\n");
  for (const auto& [g, d] : maturity.deficit) {
    absl::StrAppend(&out, "maturity.", g, ".deficit = ", Num(d), "\n");
  }
  absl::StrAppend(&out, "band.low_ratio = ", Num(band.low_ratio), "\n");
  absl::StrAppend(&out, "band.high_ratio = ", Num(band.high_ratio), "\n");
  for (const auto& [facts, r] : band.fewer_facts) {
    const std::string key = absl::StrCat("band.", StatedFactsName(facts));
    absl::StrAppend(&out, key, ".low_ratio = ", Num(r.low), "\n");
    absl::StrAppend(&out, key, ".high_ratio = ", Num(r.high), "\n");
  }
  if (band.max_gpus > 0) absl::StrAppend(&out, "band.max_gpus = ", band.max_gpus, "\n");
  for (const auto& [k, n] : band.seen) absl::StrAppend(&out, "band.seen.", k, " = ", n, "\n");
  absl::StrAppend(&out, "stack.overlap_eff = ", Num(stack.overlap_eff), "\n");
  absl::StrAppend(&out, "stack.eager_traffic = ", Num(stack.eager_traffic), "\n");
  absl::StrAppend(&out, "stack.compiled_traffic = ", Num(stack.compiled_traffic), "\n");
  if (stack.efficiency != 1)
    absl::StrAppend(&out, "stack.efficiency = ", Num(stack.efficiency), "\n");
  absl::StrAppend(&out, "moe.grouped_gemm_krows = ", Num(moe.grouped_gemm_krows), "\n");
  absl::StrAppend(&out, "moe.a2a_eff = ", Num(moe.a2a_eff), "\n");
  absl::StrAppend(&out, "moe.layer_overhead_s = ", Num(moe.layer_overhead_s), "\n");
  absl::StrAppend(&out, "moe.overlap_chunk_overhead_s = ", Num(moe.overlap_chunk_overhead_s), "\n");
  return out;
}

namespace {

// One "key = value" line of a profile, its comment and padding removed.
struct ProfileLine {
  std::string key;
  absl::string_view value;
};

// The line's key and value; nullopt for a blank or comment-only line.
absl::StatusOr<std::optional<ProfileLine>> SplitProfileLine(absl::string_view line, int line_no) {
  if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
  line = absl::StripAsciiWhitespace(line);
  if (line.empty()) return std::nullopt;
  const size_t eq = line.find('=');
  if (eq == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("profile line ", line_no, ": no '='"));
  }
  return ProfileLine{std::string(absl::StripAsciiWhitespace(line.substr(0, eq))),
                     absl::StripAsciiWhitespace(line.substr(eq + 1))};
}

// A line that describes the profile rather than set a parameter (name, description, info.*,
// base, change.*): read into `p`; false for a parameter line. `changed`: the change keys seen.
absl::StatusOr<bool> ReadDescriptionLine(const ProfileLine& l, Profile* p,
                                         std::set<std::string, std::less<>>* changed) {
  if (l.key == "name") {
    p->name = std::string(l.value);
  } else if (l.key == "description") {
    p->description = std::string(l.value);
  } else if (absl::StartsWith(l.key, "info.")) {
    p->info[l.key.substr(5)] = std::string(l.value);
  } else if (l.key == "base") {
    if (l.value.empty()) return absl::InvalidArgumentError("empty");
    p->base = std::string(l.value);
  } else if (absl::StartsWith(l.key, "change.")) {
    ASSIGN_OR_RETURN(ParameterChange c, ParseChange(l.key.substr(7), l.value));
    if (!changed->insert(c.key).second) return absl::InvalidArgumentError("changed twice");
    p->changes.push_back(std::move(c));
  } else {
    return false;
  }
  return true;
}

// Where a numeric parameter key keeps its value in `p` (an accelerator family's or a
// generation's entry created at its prior); nullptr for a key the model does not know.
double* ParameterSlot(Profile* p, absl::string_view key) {
  if (key == "global.comm_slowdown") return &p->global.comm_slowdown;
  if (key == "global.step_host_s") return &p->global.step_host_s;
  if (key == "global.step_sync_s") return &p->global.step_sync_s;
  if (key == "global.layer_host_s") return &p->global.layer_host_s;
  if (key == "global.ssd_kflops_per_sm_clock") return &p->global.ssd_kflops_per_sm_clock;
  if (key == "band.low_ratio") return &p->band.low_ratio;
  if (key == "band.high_ratio") return &p->band.high_ratio;
  if (key == "maturity.years") return &p->maturity.years;
  const std::vector<std::string> parts = absl::StrSplit(key, '.');
  if (parts.size() == 3 && parts[0] == "accel") {
    AcceleratorParams& a = p->accelerators.try_emplace(parts[1], PriorFor(parts[1])).first->second;
    if (parts[2] == "gemm_eff") return &a.gemm_eff;
    if (parts[2] == "fp8_gemm_ratio") return &a.fp8_gemm_ratio;
    if (parts[2] == "attn_eff") return &a.attn_eff;
    if (parts[2] == "hbm_eff") return &a.hbm_eff;
    return nullptr;
  }
  if (parts.size() == 3 && parts[0] == "maturity" && parts[2] == "deficit") {
    return &p->maturity.deficit.try_emplace(parts[1], kMaturityDeficitPrior).first->second;
  }
  StatedFacts facts = StatedFacts::kAll;
  if (parts.size() == 3 && parts[0] == "band" && ParseStatedFacts(parts[1], &facts) &&
      facts != StatedFacts::kAll && (parts[2] == "low_ratio" || parts[2] == "high_ratio")) {
    BandParams::Ratios& r = p->band.fewer_facts[facts];
    return parts[2] == "low_ratio" ? &r.low : &r.high;
  }
  if (parts.size() != 2) return nullptr;
  if (parts[0] == "stack") {
    if (parts[1] == "overlap_eff") return &p->stack.overlap_eff;
    if (parts[1] == "eager_traffic") return &p->stack.eager_traffic;
    if (parts[1] == "compiled_traffic") return &p->stack.compiled_traffic;
    if (parts[1] == "efficiency") return &p->stack.efficiency;
  }
  if (parts[0] == "moe") {
    if (parts[1] == "grouped_gemm_krows") return &p->moe.grouped_gemm_krows;
    if (parts[1] == "a2a_eff") return &p->moe.a2a_eff;
    if (parts[1] == "layer_overhead_s") return &p->moe.layer_overhead_s;
    if (parts[1] == "overlap_chunk_overhead_s") return &p->moe.overlap_chunk_overhead_s;
  }
  return nullptr;
}

// A parameter line: a retired parameter (kept as info.retired.<key>), a band count, or a number
// in (0, 10] for a known parameter.
absl::Status ReadParameterLine(const ProfileLine& l, Profile* p) {
  if (RetiredParam(l.key) != nullptr) {
    p->info[absl::StrCat("retired.", l.key)] = std::string(l.value);
    return absl::OkStatus();
  }
  if (absl::StartsWith(l.key, "band.seen.") || l.key == "band.max_gpus") {
    int n = 0;
    if (!absl::SimpleAtoi(l.value, &n) || n < 1) {
      return absl::InvalidArgumentError("not a positive integer");
    }
    if (l.key == "band.max_gpus") {
      p->band.max_gpus = n;
    } else {
      p->band.seen[l.key.substr(10)] = n;
    }
    return absl::OkStatus();
  }
  double v = 0;
  if (!absl::SimpleAtod(l.value, &v) || !(v > 0) || v > 10) {
    return absl::InvalidArgumentError("not a number in (0, 10]");
  }
  double* slot = ParameterSlot(p, l.key);
  if (slot == nullptr) return absl::InvalidArgumentError("unknown parameter");
  *slot = v;
  return absl::OkStatus();
}

// A layer holds change lines and no parameters; a full profile no change lines.
absl::Status CheckProfileKind(const Profile& p, int parameter_line) {
  if (p.IsLayer() && parameter_line != 0) {
    return absl::InvalidArgumentError(absl::StrCat("profile line ", parameter_line,
                                                   ": a layer (base = ", p.base,
                                                   ") holds change lines, not parameters"));
  }
  if (!p.IsLayer() && !p.changes.empty()) {
    return absl::InvalidArgumentError("profile: change lines need a 'base = <profile>' line");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Profile> Profile::FromText(absl::string_view text) {
  Profile p;
  p.accelerators.clear();
  int line_no = 0;
  int parameter_line = 0;  // the first parameter line, which a layer must not have
  std::set<std::string, std::less<>> changed;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    ASSIGN_OR_RETURN(const std::optional<ProfileLine> line, SplitProfileLine(raw, line_no));
    if (!line.has_value()) continue;
    auto at_line = [&](const absl::Status& s) {
      return absl::InvalidArgumentError(
          absl::StrCat("profile line ", line_no, ": ", line->key, ": ", s.message()));
    };
    absl::StatusOr<bool> described = ReadDescriptionLine(*line, &p, &changed);
    if (!described.ok()) return at_line(described.status());
    if (*described) continue;
    if (parameter_line == 0) parameter_line = line_no;
    if (absl::Status s = ReadParameterLine(*line, &p); !s.ok()) return at_line(s);
  }
  RETURN_IF_ERROR(CheckProfileKind(p, parameter_line));
  std::sort(p.changes.begin(), p.changes.end(),
            [](const ParameterChange& a, const ParameterChange& b) { return a.key < b.key; });
  return p;
}

absl::StatusOr<double> ParameterValue(const Profile& p, absl::string_view key) {
  Profile copy = p;
  for (const ParamRef& r : FittableParams(&copy, FamiliesOf(key))) {
    if (r.key == key) return *r.value;
  }
  return absl::InvalidArgumentError(absl::StrCat(key, ": not a fittable parameter"));
}

absl::Status SetParameter(Profile* p, absl::string_view key, double value) {
  Profile copy = *p;
  for (const ParamRef& r : FittableParams(&copy, FamiliesOf(key))) {
    if (r.key != key) continue;
    if (!(value >= r.lo && value <= r.hi)) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, ": ", value, " is outside [", r.lo, ", ", r.hi, "]"));
    }
    *r.value = value;
    *p = std::move(copy);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(key, ": not a fittable parameter"));
}

absl::StatusOr<Profile> ApplyLayer(const Profile& base, const Profile& layer) {
  Profile out = base;
  out.name = layer.name;
  out.description = layer.description;
  out.info = layer.info;
  out.base = layer.base;
  out.changes = layer.changes;
  for (const ParameterChange& c : layer.changes) {
    if (const Retired* r = RetiredParam(c.key)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "profile '", layer.name, "': change.", c.key, ": this parameter is retired, replaced by ",
          r->replaced_by, "; calibrate the layer again"));
    }
    if (absl::Status s = SetParameter(&out, c.key, c.new_value); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("profile '", layer.name, "': change.", s.message()));
    }
  }
  return out;
}

absl::StatusOr<Profile> ResolveLayers(
    const Profile& top, const Profile& builtin,
    const std::function<absl::StatusOr<Profile>(const std::string&)>& lookup,
    std::vector<std::string>* chain) {
  std::vector<Profile> layers;  // top first
  std::vector<std::string> names = {top.name};
  Profile bottom;
  const Profile* current = &top;
  Profile fetched;
  while (current->IsLayer()) {
    layers.push_back(*current);
    if (static_cast<int>(layers.size()) > kMaxProfileDepth) {
      return absl::FailedPreconditionError(absl::StrCat("profile '", top.name, "': more than ",
                                                        kMaxProfileDepth, " layers deep (",
                                                        absl::StrJoin(names, " -> "), ")"));
    }
    const std::string base = current->base;  // `fetched` is reused below
    if (std::find(names.begin(), names.end(), base) != names.end()) {
      names.push_back(base);
      return absl::FailedPreconditionError(absl::StrCat(
          "profile '", top.name, "': its bases form a cycle (", absl::StrJoin(names, " -> "), ")"));
    }
    names.push_back(base);
    if (base == "default") {
      fetched = builtin;
      fetched.base.clear();
      fetched.changes.clear();
    } else {
      absl::StatusOr<Profile> next = lookup(base);
      if (!next.ok()) {
        if (next.status().code() == absl::StatusCode::kNotFound) {
          return absl::FailedPreconditionError(absl::StrCat(
              "profile '", current->name, "' layers on '", base, "', which is not stored"));
        }
        return next.status();
      }
      fetched = *std::move(next);
    }
    current = &fetched;
    if (!current->IsLayer()) bottom = *current;
  }
  if (layers.empty()) bottom = top;
  Profile resolved = bottom;
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
    absl::StatusOr<Profile> next = ApplyLayer(resolved, *it);
    if (!next.ok()) return next.status();
    resolved = *std::move(next);
  }
  if (chain != nullptr) *chain = std::move(names);
  return resolved;
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
  // From none to 0.1 s a doubling of the ranks (global.step_host_s and global.layer_host_s are
  // measured, not fitted).
  refs.push_back(
      {"global.step_sync_s", &p->global.step_sync_s, 1e-5, 0.1, GlobalParams().step_sync_s});
  // The SSD scan's kernels: from 30 FLOPs per SM and clock up to a Hopper SM's tensor peak.
  refs.push_back({"global.ssd_kflops_per_sm_clock", &p->global.ssd_kflops_per_sm_clock, 0.03, 4.096,
                  GlobalParams().ssd_kflops_per_sm_clock});
  const StackParams prior_stack;
  refs.push_back({"stack.overlap_eff", &p->stack.overlap_eff, 0.3, 1.0, prior_stack.overlap_eff});
  refs.push_back(
      {"stack.eager_traffic", &p->stack.eager_traffic, 1.0, 5.0, prior_stack.eager_traffic});
  refs.push_back({"stack.compiled_traffic", &p->stack.compiled_traffic, 1.0, 3.0,
                  prior_stack.compiled_traffic});
  // Only a calibrated layer moves it (Fit leaves it at 1): a stack's measured level against the
  // model, 0.25-4x (ParameterChange values are read in (0, 10]).
  refs.push_back({"stack.efficiency", &p->stack.efficiency, 0.25, 4.0, 1.0, /*layer_only=*/true});
  const MoeParams prior_moe;
  refs.push_back({"moe.grouped_gemm_krows", &p->moe.grouped_gemm_krows, 0.001, 4.0,
                  prior_moe.grouped_gemm_krows});
  refs.push_back({"moe.a2a_eff", &p->moe.a2a_eff, 0.2, 1.0, prior_moe.a2a_eff});
  refs.push_back(
      {"moe.layer_overhead_s", &p->moe.layer_overhead_s, 1e-5, 0.02, prior_moe.layer_overhead_s});
  refs.push_back({"moe.overlap_chunk_overhead_s", &p->moe.overlap_chunk_overhead_s, 1e-4, 0.2,
                  prior_moe.overlap_chunk_overhead_s});
  // Software maturity: the shared time constant (0.3-4 years: libraries of a generation keep
  // improving for a few years), and the launch deficit of each generation the families belong to.
  refs.push_back({"maturity.years", &p->maturity.years, 0.3, 4.0, MaturityParams().years});
  std::set<std::string> generations;
  for (const std::string& f : families) {
    const std::string g(GenerationOf(f));
    if (GenerationLaunch(g) <= 0 || !generations.insert(g).second) continue;
    double* d = &p->maturity.deficit.try_emplace(g, kMaturityDeficitPrior).first->second;
    refs.push_back({"maturity." + g + ".deficit", d, 0.0, 0.7, kMaturityDeficitPrior});
  }
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
