#include "server/convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "model/status_macros.h"
#include "model/workload.h"
#include "server/convert_gen.h"
#include "server/hf_config.h"

namespace scalecast {
namespace {

// Errors name the field as `path` + `field` ("scenario" + ".workload.precision"), joined only
// when there is an error: a valid request builds no path strings. At the top of a request (an
// empty `path`: a PlanRequest's own workload) the field is named without the leading dot
// ("workload.precision").
// A field of a message under the request (`sub`: ".parallelism") is named path + sub + field.
std::string FieldPath(absl::string_view path, absl::string_view sub, absl::string_view field = "") {
  std::string out = absl::StrCat(path, sub, field);
  if (path.empty() && absl::StartsWith(out, ".")) out.erase(0, 1);
  return out;
}

template <NamedEnum E>
absl::StatusOr<E> Enum(int value, absl::string_view path, absl::string_view sub,
                       absl::string_view field) {
  if (value < 0 || value > MaxEnumValue<E>()) {
    return absl::InvalidArgumentError(
        absl::StrCat(FieldPath(path, sub, field), ": unknown enum value ", value));
  }
  return static_cast<E>(value);
}

template <NamedEnum E>
absl::StatusOr<E> Enum(int value, absl::string_view path, absl::string_view field) {
  return Enum<E>(value, path, "", field);
}

absl::Status Finite(double v, absl::string_view path, absl::string_view field) {
  if (!std::isfinite(v)) {
    return absl::InvalidArgumentError(absl::StrCat(FieldPath(path, "", field), ": not a number"));
  }
  return absl::OkStatus();
}

// A string field longer than `max` bytes is refused before anything echoes it.
absl::Status Length(absl::string_view v, size_t max, absl::string_view path,
                    absl::string_view field) {
  if (v.size() > max) {
    return absl::InvalidArgumentError(absl::StrCat(FieldPath(path, "", field), ": ", v.size(),
                                                   " bytes, over the limit of ", max));
  }
  // PostgreSQL's text ends at a NUL byte: a name or filter with one would be matched or stored
  // cut short (SQLite would keep it), so neither backend takes it.
  if (v.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(FieldPath(path, "", field), ": contains a NUL byte"));
  }
  return absl::OkStatus();
}

// The MoE and MLA messages. Their bounds are checked where the scenario is resolved
// (CheckModelFields); only what cannot travel further (a NaN) is refused here.
absl::Status FromProto(const pb::ModelSpec& m, absl::string_view path, ModelSpec* out) {
  convert_gen::CopyFromProto(m.moe(), &out->moe);
  convert_gen::CopyFromProto(m.mla(), &out->mla);
  return Finite(m.moe().capacity_factor(), path, ".workload.model.moe.capacity_factor");
}

// A layout's enums and recompute modules (its plain fields are copied by convert_gen), errors
// named under `path` + `sub` (".parallelism" in a Scenario; "" for a layout of its own).
absl::Status ParallelismFromProto(const pb::Parallelism& p, absl::string_view path,
                                  absl::string_view sub, Parallelism* out) {
  ASSIGN_OR_RETURN(out->sharding, Enum<Sharding>(p.sharding(), path, sub, ".sharding"));
  ASSIGN_OR_RETURN(out->recompute, Enum<Recompute>(p.recompute(), path, sub, ".recompute"));
  if (p.recompute_modules_size() > kRecomputeModules) {
    return absl::InvalidArgumentError(absl::StrCat(FieldPath(path, sub, ".recompute_modules"), ": ",
                                                   p.recompute_modules_size(),
                                                   " entries; there are ", kRecomputeModules));
  }
  for (int i = 0; i < p.recompute_modules_size(); ++i) {
    RecomputeModule module;
    if (!ParseRecomputeModule(p.recompute_modules(i), &module)) {
      return absl::InvalidArgumentError(
          absl::StrCat(FieldPath(path, sub, ".recompute_modules"), "[", i, "]: unknown module '",
                       absl::CHexEscape(p.recompute_modules(i).substr(0, 64)),
                       "' (known: ", RecomputeModulesToString(~0u), ")"));
    }
    out->recompute_modules |= Bit(module);
  }
  return absl::OkStatus();
}

// Whether `v` would fail Length: the fast test of a request's strings, the message built only
// when one does.
bool OverLength(const std::string& v, size_t max) {
  return v.size() > max || (!v.empty() && std::memchr(v.data(), '\0', v.size()) != nullptr);
}

// A request's string and its bound, named by its field's path below the request's.
struct TextField {
  const std::string& value;
  size_t max;
  absl::string_view field;
};

// Each string within its bound (Length); the first that is not names the error.
absl::Status CheckTexts(std::initializer_list<TextField> texts, absl::string_view path) {
  for (const TextField& t : texts) {
    if (t.value.empty()) continue;
    if (absl::Status st = Length(t.value, t.max, path, t.field); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckLengths(const pb::Scenario& in, absl::string_view path) {
  const pb::ModelSpec& model = in.workload().model();
  const pb::AcceleratorSpec& spec = in.cluster().accelerator_spec();
  const pb::Stack& stack = in.stack();
  if (!OverLength(model.name(), kMaxNameBytes) &&
      !OverLength(model.layer_pattern(), kMaxLayerPatternBytes) &&
      !OverLength(in.cluster().accelerator(), kMaxNameBytes) &&
      !OverLength(spec.id(), kMaxNameBytes) && !OverLength(spec.like(), kMaxNameBytes) &&
      !OverLength(in.framework(), kMaxNameBytes) && !OverLength(in.calibration(), kMaxNameBytes) &&
      !OverLength(in.label(), kMaxLabelValueBytes) &&
      !OverLength(stack.fp8_recipe(), kMaxNameBytes) &&
      !OverLength(stack.attention_kernel(), kMaxNameBytes) &&
      !OverLength(stack.cp_comm_type(), kMaxNameBytes) &&
      !OverLength(stack.version(), kMaxNameBytes)) {
    return absl::OkStatus();
  }
  // One is refused: the first in the order below names it.
  return CheckTexts(
      {{in.workload().model().name(), kMaxNameBytes, ".workload.model.name"},
       {in.workload().model().layer_pattern(), kMaxLayerPatternBytes,
        ".workload.model.layer_pattern"},
       {in.cluster().accelerator(), kMaxNameBytes, ".cluster.accelerator"},
       {in.cluster().accelerator_spec().id(), kMaxNameBytes, ".cluster.accelerator_spec.id"},
       {in.cluster().accelerator_spec().like(), kMaxNameBytes, ".cluster.accelerator_spec.like"},
       {in.framework(), kMaxNameBytes, ".framework"},
       {in.calibration(), kMaxNameBytes, ".calibration"},
       {in.label(), kMaxLabelValueBytes, ".label"},
       {in.stack().fp8_recipe(), kMaxNameBytes, ".stack.fp8_recipe"},
       {in.stack().attention_kernel(), kMaxNameBytes, ".stack.attention_kernel"},
       {in.stack().cp_comm_type(), kMaxNameBytes, ".stack.cp_comm_type"},
       {in.stack().version(), kMaxNameBytes, ".stack.version"}},
      path);
}

absl::Status CheckLengths(const pb::MeasurementFilter& in, absl::string_view path) {
  RETURN_IF_ERROR(CheckTexts({{in.accelerator(), kMaxNameBytes, ".accelerator"},
                              {in.framework(), kMaxNameBytes, ".framework"},
                              {in.source(), kMaxSourceBytes, ".source"}},
                             path));
  if (in.labels_size() > static_cast<int>(kMaxLabels)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".labels: ", in.labels_size(),
                                                   " labels, over the limit of ", kMaxLabels));
  }
  // In key order: with several labels too long, the same one is named every time (a protobuf
  // map's own order changes from process to process).
  std::vector<std::pair<absl::string_view, absl::string_view>> labels(in.labels().begin(),
                                                                      in.labels().end());
  std::sort(labels.begin(), labels.end());
  for (const auto& [k, v] : labels) {
    if (absl::Status st = Length(k, kMaxLabelKeyBytes, path, ".labels (a key)"); !st.ok()) {
      return st;
    }
    if (absl::Status st = Length(v, kMaxLabelValueBytes, path, ".labels (a value)"); !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Scenario> FromProto(const pb::Scenario& in, absl::string_view path) {
  Scenario s;
  if (absl::Status st = FromProto(in, path, &s); !st.ok()) return st;
  return s;
}

absl::Status FromProto(const pb::Scenario& in, absl::string_view path, Scenario* out) {
  if (absl::Status st = CheckLengths(in, path); !st.ok()) return st;
  // The plain fields (numbers, bools, strings) field for field (server/convert_gen.h, generated
  // from the proto); enums, nested messages and lists below.
  Scenario& s = *out;
  convert_gen::CopyFromProto(in, &s);
  convert_gen::CopyFromProto(in.workload(), &s.workload);
  convert_gen::CopyFromProto(in.cluster(), &s.cluster);
  convert_gen::CopyFromProto(in.parallelism(), &s.parallelism);
  convert_gen::CopyFromProto(in.stack(), &s.stack);
  const pb::ModelSpec& m = in.workload().model();
  convert_gen::CopyFromProto(m, &s.workload.model);
  auto mlp = Enum<Mlp>(m.mlp(), path, ".workload.model.mlp");
  if (!mlp.ok()) return mlp.status();
  s.workload.model.mlp = *mlp;
  if (absl::Status st = FromProto(m, path, &s.workload.model); !st.ok()) {
    return st;
  }
  // A config.json: its shape, with the fields the request sets over it.
  if (!m.hf_config_json().empty()) {
    absl::StatusOr<HfModel> hf =
        ParseHfConfig(m.hf_config_json(), FieldPath(path, ".workload.model.hf_config_json"));
    if (!hf.ok()) return hf.status();
    s.workload.model = OverlayShape(hf->spec, s.workload.model);
    s.input_warnings = std::move(hf->warnings);
  }
  auto precision = Enum<Precision>(in.workload().precision(), path, ".workload.precision");
  if (!precision.ok()) return precision.status();
  s.workload.precision = *precision;

  if (absl::Status st =
          Finite(s.cluster.inter_node_gbps_per_gpu, path, ".cluster.inter_node_gbps_per_gpu");
      !st.ok()) {
    return st;
  }
  if (in.cluster().has_accelerator_spec()) {
    s.cluster.accelerator_spec = FromProto(in.cluster().accelerator_spec());
  }
  return ParallelismFromProto(in.parallelism(), path, ".parallelism", &s.parallelism);
}

absl::Status FromProto(const pb::Parallelism& in, absl::string_view path, Parallelism* out) {
  convert_gen::CopyFromProto(in, out);
  return ParallelismFromProto(in, path, "", out);
}

bool Echoed(const MoeSpec& m) {
  return m.enabled() || m.capacity_factor != 0 || m.force_balance || m.expert_bias;
}
bool Echoed(const MlaSpec& m) { return m.enabled(); }
bool Echoed(const AcceleratorSpec& s) { return !s.empty(); }
bool Echoed(const Uncertainty& u) { return u.level > 0; }

void ToProto(const ModelSpec& in, pb::ModelSpec* out) {
  convert_gen::CopyToProto(in, out);
  out->set_mlp(static_cast<pb::Mlp>(in.mlp));
  if (Echoed(in.moe)) convert_gen::CopyToProto(in.moe, out->mutable_moe());
  if (Echoed(in.mla)) convert_gen::CopyToProto(in.mla, out->mutable_mla());
}

void ToProto(const ModelPreset& in, pb::ListModelsResponse* out) {
  ToProto(in.spec, out->add_models());
  pb::ModelSize* size = out->add_sizes();
  // Total and activated (what one token passes through: the top-k of the routed experts).
  const ParamCount count = CountParams(Shape(in.spec));
  size->set_total_params(count.total);
  size->set_activated_params(count.activated);
}

void ToProto(const Parallelism& in, pb::Parallelism* out) {
  convert_gen::CopyToProto(in, out);
  out->set_sharding(static_cast<pb::Sharding>(in.sharding));
  out->set_recompute(static_cast<pb::Recompute>(in.recompute));
  if (in.recompute_modules == 0) return;  // no list to build
  for (std::string& name : RecomputeModuleNames(in.recompute_modules)) {
    out->add_recompute_modules(std::move(name));
  }
}

void ToProto(const StackOptions& in, pb::Stack* out) { convert_gen::CopyToProto(in, out); }

void ToProto(const Scenario& in, pb::Scenario* out) {
  convert_gen::CopyToProto(in, out);
  ToProto(in.workload.model, out->mutable_workload()->mutable_model());
  convert_gen::CopyToProto(in.workload, out->mutable_workload());
  out->mutable_workload()->set_precision(static_cast<pb::Precision>(in.workload.precision));
  convert_gen::CopyToProto(in.cluster, out->mutable_cluster());
  if (Echoed(in.cluster.accelerator_spec)) {
    ToProto(in.cluster.accelerator_spec, out->mutable_cluster()->mutable_accelerator_spec());
  }
  ToProto(in.parallelism, out->mutable_parallelism());
  ToProto(in.stack, out->mutable_stack());
}

void ToProto(const Prediction& in, pb::Prediction* out) {
  if (!in.label.empty()) out->set_label(in.label);
  ToProto(in.layout, out->mutable_layout());
  out->set_step_time_s(in.step_time_s);
  out->set_tokens_per_s(in.tokens_per_s);
  out->set_tokens_per_s_per_gpu(in.tokens_per_s_per_gpu);
  out->set_mfu(in.mfu);
  out->set_hfu(in.hfu);
  out->set_model_tflops_per_gpu(in.model_tflops_per_gpu);
  pb::TimeBreakdown* t = out->mutable_time();
  t->set_compute_s(in.time.compute_s);
  t->set_recompute_s(in.time.recompute_s);
  t->set_pipeline_bubble_s(in.time.pipeline_bubble_s);
  t->set_optimizer_s(in.time.optimizer_s);
  t->mutable_comm()->Reserve(static_cast<int>(in.time.comm.size()));
  for (const CommTime& c : in.time.comm) {
    pb::CommTime* pc = t->add_comm();
    pc->set_kind(c.kind);
    pc->set_total_s(c.total_s);
    pc->set_exposed_s(c.exposed_s);
    pc->set_bytes_per_gpu(c.bytes_per_gpu);
    pc->set_ranks(c.ranks);
  }
  pb::MemoryBreakdown* m = out->mutable_memory();
  m->set_weights_bytes(in.memory.weights_bytes);
  m->set_gradients_bytes(in.memory.gradients_bytes);
  m->set_optimizer_bytes(in.memory.optimizer_bytes);
  m->set_activations_bytes(in.memory.activations_bytes);
  m->set_other_bytes(in.memory.other_bytes);
  m->set_total_bytes(in.memory.total_bytes);
  m->set_capacity_bytes(in.memory.capacity_bytes);
  m->set_fits(in.memory.fits);
  m->set_host_bytes(in.memory.host_bytes);
  m->set_host_capacity_bytes(in.memory.host_capacity_bytes);
  out->mutable_power()->set_watts_per_gpu(in.power.watts_per_gpu);
  out->mutable_power()->set_cluster_kw(in.power.cluster_kw);
  out->mutable_power()->set_joules_per_token(in.power.joules_per_token);
  for (const std::string& w : in.warnings) out->add_warnings(w);
  if (Echoed(in.uncertainty)) {
    pb::Uncertainty* u = out->mutable_uncertainty();
    u->set_low(in.uncertainty.low);
    u->set_high(in.uncertainty.high);
    u->set_level(in.uncertainty.level);
    u->set_basis(in.uncertainty.basis);
  }
}

absl::StatusOr<Measurement> FromProto(const pb::Measurement& in, absl::string_view path) {
  Measurement m;
  auto s = FromProto(in.scenario(), absl::StrCat(path, ".scenario"));
  if (!s.ok()) return s.status();
  m.scenario = *std::move(s);
  m.id = in.id();
  m.tokens_per_s_per_gpu = in.tokens_per_s_per_gpu();
  m.step_time_s = in.step_time_s();
  m.watts_per_gpu = in.watts_per_gpu();
  if (!std::isfinite(m.tokens_per_s_per_gpu) || m.tokens_per_s_per_gpu <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".tokens_per_s_per_gpu: must be a positive number"));
  }
  if (!std::isfinite(m.step_time_s) || m.step_time_s < 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".step_time_s: must be >= 0"));
  }
  if (!std::isfinite(m.watts_per_gpu) || m.watts_per_gpu < 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".watts_per_gpu: must be >= 0"));
  }
  if (absl::Status st = Length(in.source(), kMaxSourceBytes, path, ".source"); !st.ok()) {
    return st;
  }
  m.source = in.source();
  for (const auto& [k, v] : in.labels()) m.labels[k] = v;
  // Checked before multiplying: seconds * 1000 must not overflow.
  const int64_t seconds = in.recorded_at().seconds();
  const int32_t nanos = in.recorded_at().nanos();
  if (seconds < 0 || seconds > kMaxRecordedAtUnixMs / 1000 || nanos < 0 || nanos > 999'999'999) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ".recorded_at: must be between 1970 and 9999, got ", seconds, " s ", nanos, " ns"));
  }
  m.recorded_at_unix_ms = seconds * 1000 + nanos / 1000000;
  // The store's bounds (plausible values, label sizes), with this request's field path.
  if (absl::Status st = ValidateMeasurement(m, path); !st.ok()) return st;
  return m;
}

void ToProto(const Measurement& in, pb::Measurement* out) {
  out->set_id(in.id);
  ToProto(in.scenario, out->mutable_scenario());
  out->set_tokens_per_s_per_gpu(in.tokens_per_s_per_gpu);
  out->set_step_time_s(in.step_time_s);
  out->set_watts_per_gpu(in.watts_per_gpu);
  out->set_source(in.source);
  for (const auto& [k, v] : in.labels) (*out->mutable_labels())[k] = v;
  out->mutable_recorded_at()->set_seconds(in.recorded_at_unix_ms / 1000);
  out->mutable_recorded_at()->set_nanos(static_cast<int32_t>(in.recorded_at_unix_ms % 1000) *
                                        1000000);
}

absl::StatusOr<Objective> FromProto(pb::Objective in, absl::string_view path) {
  switch (in) {
    case pb::OBJECTIVE_UNSPECIFIED:
    case pb::OBJECTIVE_THROUGHPUT:
      return Objective::kThroughput;
    case pb::OBJECTIVE_ENERGY:
      return Objective::kEnergy;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": unknown enum value ", static_cast<int>(in)));
  }
}

void ToProto(const ErrorStats& in, pb::ErrorStats* out) {
  out->set_count(in.count);
  out->set_mape(in.mape);
  out->set_median_ape(in.median_ape);
}

std::vector<std::pair<std::string, ErrorStats>> LargestGroups(
    const std::map<std::string, ErrorStats>& in, size_t max_groups) {
  std::vector<std::pair<std::string, ErrorStats>> groups(in.begin(), in.end());
  const auto larger = [](const auto& a, const auto& b) {
    return a.second.count != b.second.count ? a.second.count > b.second.count : a.first < b.first;
  };
  if (groups.size() > max_groups) {
    std::nth_element(groups.begin(), groups.begin() + max_groups, groups.end(), larger);
    groups.resize(max_groups);
  }
  std::sort(groups.begin(), groups.end(), larger);
  return groups;
}

void ToProto(const ValidationReport& report, bool include_rows, pb::ValidateResponse* out) {
  if (include_rows) {
    for (const ValidationRow& row : report.rows) {
      pb::ValidationRow* r = out->add_rows();
      r->set_measurement_id(row.measurement->id);
      r->set_label(row.measurement->scenario.workload.model.name);
      r->set_framework(row.measurement->scenario.framework);
      r->set_accelerator(row.measurement->scenario.cluster.accelerator);
      r->set_predicted_tokens_per_s_per_gpu(row.predicted_tokens_per_s_per_gpu);
      r->set_measured_tokens_per_s_per_gpu(row.measurement->tokens_per_s_per_gpu);
      r->set_error(row.error);
      ToProto(row.layout, r->mutable_layout());
      r->set_failure(row.failure);
    }
  }
  ToProto(report.overall, out->mutable_overall());
  for (const auto& [k, v] : report.by_accelerator) ToProto(v, &(*out->mutable_by_accelerator())[k]);
  for (const auto& [k, v] : report.by_framework) ToProto(v, &(*out->mutable_by_framework())[k]);
  for (const auto& [k, v] : LargestGroups(report.by_source, kMaxValidateGroups)) {
    ToProto(v, &(*out->mutable_by_source())[k]);
  }
  out->set_by_source_omitted_count(static_cast<int>(report.by_source.size()) -
                                   out->by_source_size());
  for (const auto& [k, v] : LargestGroups(report.by_label, kMaxValidateGroups)) {
    ToProto(v, &(*out->mutable_by_label())[k]);
  }
  out->set_by_label_omitted_count(static_cast<int>(report.by_label.size()) - out->by_label_size());
  out->set_failed_count(report.failed_count);
}

void ToProto(const Accelerator& in, pb::Accelerator* out) {
  out->set_id(in.id);
  out->set_name(in.name);
  out->set_family(in.family);
  auto& peaks = *out->mutable_peak_tflops();
  for (Precision p : {Precision::kBf16, Precision::kFp16, Precision::kFp8, Precision::kMxfp8,
                      Precision::kNvfp4, Precision::kMxfp4}) {
    if (in.PeakFlops(p) > 0) peaks[std::string(ToString(p))] = in.PeakFlops(p) / 1e12;
  }
  out->set_hbm_bytes(in.hbm_gib * (1LL << 30));
  out->set_hbm_bytes_per_s(in.hbm_tbps * 1e12);
  out->set_tdp_watts(in.tdp_w);
  out->set_power_limit_watts(in.power_limit_w);
  out->set_idle_watts(in.idle_w);
  out->set_gpus_per_node(in.gpus_per_node);
  out->set_nvlink_domain(in.nvlink_domain);
  out->set_nvlink_bytes_per_s(in.nvlink_gbps * 1e9);
  out->set_network_gbps_per_gpu(in.net_gbps);
  out->set_origin(in.origin);
  out->set_like(in.like);
  out->set_like_basis(in.like_basis);
  if (!in.spec.empty()) ToProto(in.spec, out->mutable_spec());
}

AcceleratorSpec FromProto(const pb::AcceleratorSpec& in) {
  AcceleratorSpec s;
  s.id = in.id();
  s.like = in.like();
  s.peak_tflops_bf16 = in.peak_tflops_bf16();
  s.peak_tflops_fp8 = in.peak_tflops_fp8();
  s.peak_tflops_fp4 = in.peak_tflops_fp4();
  s.hbm_gb = in.hbm_gb();
  s.hbm_tb_s = in.hbm_tb_s();
  s.nvlink_domain = in.nvlink_domain();
  s.nvlink_gb_s = in.nvlink_gb_s();
  s.inter_node_gbps_per_gpu = in.inter_node_gbps_per_gpu();
  s.tdp_watts = in.tdp_watts();
  s.idle_watts = in.idle_watts();
  s.tensor_flops_per_exp = in.tensor_flops_per_exp();
  return s;
}

void ToProto(const System& in, pb::System* out) {
  out->set_id(in.id);
  out->set_name(in.name);
  for (const std::string& a : in.aliases) out->add_aliases(a);
  out->set_accelerator(in.accelerator);
  out->set_gpus_per_node(in.gpus_per_node);
  out->set_network_gbps_per_gpu(in.net_gbps);
}

void ToProto(const AcceleratorSpec& in, pb::AcceleratorSpec* out) {
  out->set_id(in.id);
  out->set_like(in.like);
  out->set_peak_tflops_bf16(in.peak_tflops_bf16);
  out->set_peak_tflops_fp8(in.peak_tflops_fp8);
  out->set_peak_tflops_fp4(in.peak_tflops_fp4);
  out->set_hbm_gb(in.hbm_gb);
  out->set_hbm_tb_s(in.hbm_tb_s);
  out->set_nvlink_domain(in.nvlink_domain);
  out->set_nvlink_gb_s(in.nvlink_gb_s);
  out->set_inter_node_gbps_per_gpu(in.inter_node_gbps_per_gpu);
  out->set_tdp_watts(in.tdp_watts);
  out->set_idle_watts(in.idle_watts);
  out->set_tensor_flops_per_exp(in.tensor_flops_per_exp);
}

void ToProto(const Profile& in, pb::CalibrationProfile* out) {
  out->set_name(in.name);
  auto& params = *out->mutable_parameters();
  if (in.IsLayer()) {
    // A layer shows only what it changed.
    out->set_base(in.base);
    for (const ParameterChange& c : in.changes) {
      params[c.key] = c.new_value;
      pb::ParameterChange* pc = out->add_changes();
      pc->set_key(c.key);
      pc->set_old_value(c.old_value);
      pc->set_new_value(c.new_value);
      pc->set_runs(c.runs);
      pc->set_evidence(c.evidence);
    }
    return;
  }
  for (absl::string_view line : absl::StrSplit(in.ToText(), '\n')) {
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    const std::string key(absl::StripAsciiWhitespace(line.substr(0, eq)));
    double v = 0;
    if (absl::StartsWith(key, "info.") || key == "name" || key == "description") continue;
    if (absl::SimpleAtod(absl::StripAsciiWhitespace(line.substr(eq + 1)), &v)) params[key] = v;
  }
}

}  // namespace scalecast
