#include "server/convert.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "model/workload.h"
#include "server/hf_config.h"

namespace scalecast {
namespace {

// Errors name the field as `path` + `field` ("scenario" + ".workload.precision"), joined only
// when there is an error: a valid request builds no path strings.
template <NamedEnum E>
absl::StatusOr<E> Enum(int value, absl::string_view path, absl::string_view field) {
  if (value < 0 || value > MaxEnumValue<E>()) {
    return absl::InvalidArgumentError(absl::StrCat(path, field, ": unknown enum value ", value));
  }
  return static_cast<E>(value);
}

absl::Status Finite(double v, absl::string_view path, absl::string_view field) {
  if (!std::isfinite(v)) {
    return absl::InvalidArgumentError(absl::StrCat(path, field, ": not a number"));
  }
  return absl::OkStatus();
}

// A string field longer than `max` bytes is refused before anything echoes it.
absl::Status Length(const std::string& v, size_t max, absl::string_view path,
                    absl::string_view field) {
  if (v.size() > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, field, ": ", v.size(), " bytes, over the limit of ", max));
  }
  // PostgreSQL's text ends at a NUL byte: a name or filter with one would be matched or stored
  // cut short (SQLite would keep it), so neither backend takes it.
  if (v.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(path, field, ": contains a NUL byte"));
  }
  return absl::OkStatus();
}

// The model fields beyond the dense core: MoE, MLA, head width, local attention, hybrid pattern.
// Their bounds are checked where the scenario is resolved (CheckModelFields); only what cannot
// travel further (a NaN) is refused here.
absl::Status FromProto(const pb::ModelSpec& m, absl::string_view path, ModelSpec* out) {
  const pb::MoeSpec& e = m.moe();
  out->moe.num_experts = e.num_experts();
  out->moe.experts_per_token = e.experts_per_token();
  out->moe.expert_ffn_hidden = e.expert_ffn_hidden();
  out->moe.shared_experts = e.shared_experts();
  out->moe.shared_ffn_hidden = e.shared_ffn_hidden();
  out->moe.dense_layers = e.dense_layers();
  out->moe.capacity_factor = e.capacity_factor();
  out->moe.force_balance = e.force_balance();
  out->moe.expert_bias = e.expert_bias();
  out->moe.latent_size = e.latent_size();
  out->moe.router_groups = e.router_groups();
  out->moe.router_group_topk = e.router_group_topk();
  if (absl::Status st = Finite(e.capacity_factor(), path, ".workload.model.moe.capacity_factor");
      !st.ok()) {
    return st;
  }
  const pb::MlaSpec& a = m.mla();
  out->mla.q_lora_rank = a.q_lora_rank();
  out->mla.kv_lora_rank = a.kv_lora_rank();
  out->mla.qk_nope_head_dim = a.qk_nope_head_dim();
  out->mla.qk_rope_head_dim = a.qk_rope_head_dim();
  out->mla.v_head_dim = a.v_head_dim();
  out->head_dim = m.head_dim();
  out->attention_window = m.attention_window();
  out->full_attention_every = m.full_attention_every();
  out->layer_pattern = m.layer_pattern();
  out->mamba_heads = m.mamba_heads();
  out->mamba_head_dim = m.mamba_head_dim();
  out->mamba_state = m.mamba_state();
  out->mamba_groups = m.mamba_groups();
  out->mtp_layers = m.mtp_layers();
  out->tie_embeddings = m.tie_embeddings();
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckLengths(const pb::Scenario& in, absl::string_view path) {
  const struct {
    const std::string& value;
    size_t max;
    const char* field;
  } fields[] = {
      {in.workload().model().name(), kMaxNameBytes, ".workload.model.name"},
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
      {in.stack().version(), kMaxNameBytes, ".stack.version"},
  };
  for (const auto& f : fields) {
    if (absl::Status st = Length(f.value, f.max, path, f.field); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status CheckLengths(const pb::MeasurementFilter& in, absl::string_view path) {
  for (const auto& [field, value] :
       {std::pair<const char*, const std::string*>{".accelerator", &in.accelerator()},
        {".framework", &in.framework()},
        {".source", &in.source()}}) {
    if (absl::Status st = Length(*value, kMaxNameBytes, path, field); !st.ok()) {
      return st;
    }
  }
  if (in.labels_size() > static_cast<int>(kMaxLabels)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".labels: ", in.labels_size(),
                                                   " labels, over the limit of ", kMaxLabels));
  }
  for (const auto& [k, v] : in.labels()) {
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
  if (absl::Status st = CheckLengths(in, path); !st.ok()) return st;
  Scenario s;
  const pb::ModelSpec& m = in.workload().model();
  s.workload.model.name = m.name();
  s.workload.model.layers = m.layers();
  s.workload.model.hidden = m.hidden();
  s.workload.model.heads = m.heads();
  s.workload.model.kv_heads = m.kv_heads();
  s.workload.model.ffn_hidden = m.ffn_hidden();
  s.workload.model.vocab = m.vocab();
  auto mlp = Enum<Mlp>(m.mlp(), path, ".workload.model.mlp");
  if (!mlp.ok()) return mlp.status();
  s.workload.model.mlp = *mlp;
  if (absl::Status st = FromProto(m, path, &s.workload.model); !st.ok()) {
    return st;
  }
  // A config.json: its shape, with the fields the request sets over it.
  if (!m.hf_config_json().empty()) {
    absl::StatusOr<HfModel> hf =
        ParseHfConfig(m.hf_config_json(), absl::StrCat(path, ".workload.model.hf_config_json"));
    if (!hf.ok()) return hf.status();
    s.workload.model = OverlayShape(hf->spec, s.workload.model);
    s.input_warnings = std::move(hf->warnings);
  }
  s.workload.seq_len = in.workload().seq_len();
  s.workload.global_batch = in.workload().global_batch();
  auto precision = Enum<Precision>(in.workload().precision(), path, ".workload.precision");
  if (!precision.ok()) return precision.status();
  s.workload.precision = *precision;

  s.cluster.accelerator = in.cluster().accelerator();
  s.cluster.num_gpus = in.cluster().num_gpus();
  s.cluster.gpus_per_node = in.cluster().gpus_per_node();
  s.cluster.inter_node_gbps_per_gpu = in.cluster().inter_node_gbps_per_gpu();
  if (absl::Status st =
          Finite(s.cluster.inter_node_gbps_per_gpu, path, ".cluster.inter_node_gbps_per_gpu");
      !st.ok()) {
    return st;
  }
  if (in.cluster().has_accelerator_spec()) {
    s.cluster.accelerator_spec = FromProto(in.cluster().accelerator_spec());
  }
  if (in.cluster().has_hbm_headroom()) s.cluster.hbm_headroom = in.cluster().hbm_headroom();
  const pb::Parallelism& p = in.parallelism();
  s.parallelism.tp = p.tp();
  s.parallelism.pp = p.pp();
  s.parallelism.vpp = p.vpp();
  s.parallelism.cp = p.cp();
  s.parallelism.dp = p.dp();
  auto sharding = Enum<Sharding>(p.sharding(), path, ".parallelism.sharding");
  if (!sharding.ok()) return sharding.status();
  s.parallelism.sharding = *sharding;
  s.parallelism.shard_group = p.shard_group();
  s.parallelism.micro_batch = p.micro_batch();
  auto recompute = Enum<Recompute>(p.recompute(), path, ".parallelism.recompute");
  if (!recompute.ok()) return recompute.status();
  s.parallelism.recompute = *recompute;
  if (p.has_sequence_parallel()) s.parallelism.sequence_parallel = p.sequence_parallel();
  s.parallelism.ep = p.ep();
  s.parallelism.etp = p.etp();
  s.parallelism.first_stage_layers = p.first_stage_layers();
  s.parallelism.last_stage_layers = p.last_stage_layers();
  s.parallelism.embedding_in_split = p.embedding_in_split();
  s.parallelism.loss_in_split = p.loss_in_split();
  if (p.recompute_modules_size() > kRecomputeModules) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".parallelism.recompute_modules: ", p.recompute_modules_size(),
                     " entries; there are ", kRecomputeModules));
  }
  for (int i = 0; i < p.recompute_modules_size(); ++i) {
    RecomputeModule module;
    if (!ParseRecomputeModule(p.recompute_modules(i), &module)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".parallelism.recompute_modules[", i, "]: unknown module '",
                       absl::CHexEscape(p.recompute_modules(i).substr(0, 64)),
                       "' (known: ", RecomputeModulesToString(~0u), ")"));
    }
    s.parallelism.recompute_modules |= Bit(module);
  }
  const pb::Stack& st = in.stack();
  if (st.has_tp_comm_overlap()) s.stack.tp_comm_overlap = st.tp_comm_overlap();
  if (st.has_dp_overlap()) s.stack.dp_overlap = st.dp_overlap();
  if (st.has_cuda_graphs()) s.stack.cuda_graphs = st.cuda_graphs();
  if (st.has_compiled()) s.stack.compiled = st.compiled();
  if (st.has_fused_dispatch()) s.stack.fused_dispatch = st.fused_dispatch();
  if (st.has_ep_comm_overlap()) s.stack.ep_comm_overlap = st.ep_comm_overlap();
  if (st.has_bf16_grads()) s.stack.bf16_grads = st.bf16_grads();
  s.stack.fp8_recipe = st.fp8_recipe();
  s.stack.attention_kernel = st.attention_kernel();
  s.stack.version = st.version();
  s.framework = in.framework();
  s.calibration = in.calibration();
  s.label = in.label();
  return s;
}

void ToProto(const ModelSpec& in, pb::ModelSpec* out) {
  out->set_name(in.name);
  out->set_layers(in.layers);
  out->set_hidden(in.hidden);
  out->set_heads(in.heads);
  out->set_kv_heads(in.kv_heads);
  out->set_ffn_hidden(in.ffn_hidden);
  out->set_mlp(static_cast<pb::Mlp>(in.mlp));
  out->set_vocab(in.vocab);
  // Dense models leave the MoE and MLA messages absent, as an old server did.
  if (in.moe.enabled() || in.moe.capacity_factor != 0 || in.moe.force_balance ||
      in.moe.expert_bias) {
    pb::MoeSpec* e = out->mutable_moe();
    e->set_num_experts(in.moe.num_experts);
    e->set_experts_per_token(in.moe.experts_per_token);
    e->set_expert_ffn_hidden(in.moe.expert_ffn_hidden);
    e->set_shared_experts(in.moe.shared_experts);
    e->set_shared_ffn_hidden(in.moe.shared_ffn_hidden);
    e->set_dense_layers(in.moe.dense_layers);
    e->set_capacity_factor(in.moe.capacity_factor);
    e->set_force_balance(in.moe.force_balance);
    e->set_expert_bias(in.moe.expert_bias);
    e->set_latent_size(in.moe.latent_size);
    e->set_router_groups(in.moe.router_groups);
    e->set_router_group_topk(in.moe.router_group_topk);
  }
  if (in.mla.enabled()) {
    pb::MlaSpec* a = out->mutable_mla();
    a->set_q_lora_rank(in.mla.q_lora_rank);
    a->set_kv_lora_rank(in.mla.kv_lora_rank);
    a->set_qk_nope_head_dim(in.mla.qk_nope_head_dim);
    a->set_qk_rope_head_dim(in.mla.qk_rope_head_dim);
    a->set_v_head_dim(in.mla.v_head_dim);
  }
  out->set_head_dim(in.head_dim);
  out->set_attention_window(in.attention_window);
  out->set_full_attention_every(in.full_attention_every);
  out->set_layer_pattern(in.layer_pattern);
  out->set_mamba_heads(in.mamba_heads);
  out->set_mamba_head_dim(in.mamba_head_dim);
  out->set_mamba_state(in.mamba_state);
  out->set_mamba_groups(in.mamba_groups);
  out->set_mtp_layers(in.mtp_layers);
  out->set_tie_embeddings(in.tie_embeddings);
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
  out->set_tp(in.tp);
  out->set_pp(in.pp);
  out->set_vpp(in.vpp);
  out->set_cp(in.cp);
  out->set_dp(in.dp);
  out->set_sharding(static_cast<pb::Sharding>(in.sharding));
  out->set_shard_group(in.shard_group);
  out->set_micro_batch(in.micro_batch);
  out->set_recompute(static_cast<pb::Recompute>(in.recompute));
  if (in.sequence_parallel.has_value()) out->set_sequence_parallel(*in.sequence_parallel);
  out->set_ep(in.ep);
  out->set_etp(in.etp);
  out->set_first_stage_layers(in.first_stage_layers);
  out->set_last_stage_layers(in.last_stage_layers);
  out->set_embedding_in_split(in.embedding_in_split);
  out->set_loss_in_split(in.loss_in_split);
  for (std::string& name : RecomputeModuleNames(in.recompute_modules)) {
    out->add_recompute_modules(std::move(name));
  }
}

void ToProto(const StackOptions& in, pb::Stack* out) {
  if (in.tp_comm_overlap) out->set_tp_comm_overlap(*in.tp_comm_overlap);
  if (in.dp_overlap) out->set_dp_overlap(*in.dp_overlap);
  if (in.cuda_graphs) out->set_cuda_graphs(*in.cuda_graphs);
  if (in.compiled) out->set_compiled(*in.compiled);
  if (in.fused_dispatch) out->set_fused_dispatch(*in.fused_dispatch);
  if (in.ep_comm_overlap) out->set_ep_comm_overlap(*in.ep_comm_overlap);
  if (in.bf16_grads) out->set_bf16_grads(*in.bf16_grads);
  out->set_fp8_recipe(in.fp8_recipe);
  out->set_attention_kernel(in.attention_kernel);
  out->set_version(in.version);
}

void ToProto(const Scenario& in, pb::Scenario* out) {
  ToProto(in.workload.model, out->mutable_workload()->mutable_model());
  out->mutable_workload()->set_seq_len(in.workload.seq_len);
  out->mutable_workload()->set_global_batch(in.workload.global_batch);
  out->mutable_workload()->set_precision(static_cast<pb::Precision>(in.workload.precision));
  out->mutable_cluster()->set_accelerator(in.cluster.accelerator);
  out->mutable_cluster()->set_num_gpus(in.cluster.num_gpus);
  out->mutable_cluster()->set_gpus_per_node(in.cluster.gpus_per_node);
  out->mutable_cluster()->set_inter_node_gbps_per_gpu(in.cluster.inter_node_gbps_per_gpu);
  if (!in.cluster.accelerator_spec.empty()) {
    ToProto(in.cluster.accelerator_spec, out->mutable_cluster()->mutable_accelerator_spec());
  }
  if (in.cluster.hbm_headroom.has_value()) {
    out->mutable_cluster()->set_hbm_headroom(*in.cluster.hbm_headroom);
  }
  ToProto(in.parallelism, out->mutable_parallelism());
  out->set_framework(in.framework);
  ToProto(in.stack, out->mutable_stack());
  out->set_calibration(in.calibration);
  out->set_label(in.label);
}

void ToProto(const Prediction& in, pb::Prediction* out) {
  out->set_label(in.label);
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
  out->mutable_power()->set_watts_per_gpu(in.power.watts_per_gpu);
  out->mutable_power()->set_cluster_kw(in.power.cluster_kw);
  out->mutable_power()->set_joules_per_token(in.power.joules_per_token);
  for (const std::string& w : in.warnings) out->add_warnings(w);
  if (in.uncertainty.level > 0) {
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
  if (absl::Status st = Length(in.source(), kMaxNameBytes, path, ".source"); !st.ok()) {
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
  return s;
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
