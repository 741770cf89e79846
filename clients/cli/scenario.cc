// Flag values -> scalecast.v1 messages: scenarios (with --request files and compare's lists)
// and measurement filters.
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "clients/cli/flags.h"
#include "model/types.h"

namespace scalecast::cli {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

absl::Status Usage(const std::string& message) { return absl::InvalidArgumentError(message); }

absl::StatusOr<std::string> ReadFile(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Usage(absl::StrCat(flag, ": cannot read '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Flags whose value may be a comma list in `compare`.
bool ListCapable(const std::string& name) {
  static const auto* names = new std::set<std::string>{"model",
                                                       "accelerator",
                                                       "gpus",
                                                       "tp",
                                                       "pp",
                                                       "vpp",
                                                       "cp",
                                                       "dp",
                                                       "ep",
                                                       "etp",
                                                       "micro-batch",
                                                       "sharding",
                                                       "recompute",
                                                       "precision",
                                                       "seq",
                                                       "global-batch",
                                                       "gpus-per-node",
                                                       "network-gbps",
                                                       "framework",
                                                       "calibration"};
  return names->count(name) > 0;
}

// A layout degree: "auto" or 0 lets the planner choose.
absl::StatusOr<int64_t> LayoutInt(const std::string& flag, const std::string& value) {
  if (value == "auto") return 0;
  return ParseIntFlag(flag, value, 0, kInt32Max);
}

// Sets one scenario field from one (single) flag value.
absl::Status ApplyScenarioFlag(const std::string& name, const std::string& value, pb::Scenario* s) {
  const std::string flag = "--" + name;
  pb::Workload* w = s->mutable_workload();
  pb::ModelSpec* m = w->mutable_model();
  pb::Cluster* c = s->mutable_cluster();
  pb::Parallelism* p = s->mutable_parallelism();
  auto moe = [&] { return m->mutable_moe(); };
  auto mla = [&] { return m->mutable_mla(); };
  auto set_int = [&](int64_t lo, int64_t hi, auto setter) -> absl::Status {
    absl::StatusOr<int64_t> v = ParseIntFlag(flag, value, lo, hi);
    if (!v.ok()) return v.status();
    setter(*v);
    return absl::OkStatus();
  };
  auto set_layout = [&](auto setter) -> absl::Status {
    absl::StatusOr<int64_t> v = LayoutInt(flag, value);
    if (!v.ok()) return v.status();
    setter(static_cast<int32_t>(*v));
    return absl::OkStatus();
  };
  auto non_empty = [&]() -> absl::Status {
    if (value.empty()) return Usage(absl::StrCat(flag, ": needs a non-empty value"));
    return absl::OkStatus();
  };
  if (name == "model") {
    if (absl::Status st = non_empty(); !st.ok()) return st;
    m->set_name(value);
  } else if (name == "layers") {
    return set_int(1, kInt32Max, [&](int64_t v) { m->set_layers(static_cast<int32_t>(v)); });
  } else if (name == "hidden") {
    return set_int(1, kInt32Max, [&](int64_t v) { m->set_hidden(static_cast<int32_t>(v)); });
  } else if (name == "heads") {
    return set_int(1, kInt32Max, [&](int64_t v) { m->set_heads(static_cast<int32_t>(v)); });
  } else if (name == "kv-heads") {
    return set_int(1, kInt32Max, [&](int64_t v) { m->set_kv_heads(static_cast<int32_t>(v)); });
  } else if (name == "ffn-hidden") {
    return set_int(1, kInt32Max, [&](int64_t v) { m->set_ffn_hidden(static_cast<int32_t>(v)); });
  } else if (name == "vocab") {
    return set_int(1, kInt32Max, [&](int64_t v) { m->set_vocab(static_cast<int32_t>(v)); });
  } else if (name == "head-dim") {
    return set_int(0, kInt32Max, [&](int64_t v) { m->set_head_dim(static_cast<int32_t>(v)); });
  } else if (name == "hf-config") {
    // The file's bytes, parsed by the server (its one config.json parser).
    absl::StatusOr<std::string> text = ReadFile(flag, value);
    if (!text.ok()) return text.status();
    m->set_hf_config_json(*text);
  } else if (name == "tie-embeddings") {
    absl::StatusOr<bool> v = ParseBoolFlag(flag, value);
    if (!v.ok()) return v.status();
    m->set_tie_embeddings(*v);
  } else if (name == "latent-size") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { moe()->set_latent_size(static_cast<int32_t>(v)); });
  } else if (name == "router-groups") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { moe()->set_router_groups(static_cast<int32_t>(v)); });
  } else if (name == "router-group-topk") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { moe()->set_router_group_topk(static_cast<int32_t>(v)); });
  } else if (name == "mtp-layers") {
    return set_int(0, kInt32Max, [&](int64_t v) { m->set_mtp_layers(static_cast<int32_t>(v)); });
  } else if (name == "experts") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { moe()->set_num_experts(static_cast<int32_t>(v)); });
  } else if (name == "experts-per-token") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { moe()->set_experts_per_token(static_cast<int32_t>(v)); });
  } else if (name == "expert-ffn") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { moe()->set_expert_ffn_hidden(static_cast<int32_t>(v)); });
  } else if (name == "shared-experts") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { moe()->set_shared_experts(static_cast<int32_t>(v)); });
  } else if (name == "shared-ffn") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { moe()->set_shared_ffn_hidden(static_cast<int32_t>(v)); });
  } else if (name == "dense-layers") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { moe()->set_dense_layers(static_cast<int32_t>(v)); });
  } else if (name == "force-balance") {
    absl::StatusOr<bool> v = ParseBoolFlag(flag, value);
    if (!v.ok()) return v.status();
    moe()->set_force_balance(*v);
  } else if (name == "expert-bias") {
    absl::StatusOr<bool> v = ParseBoolFlag(flag, value);
    if (!v.ok()) return v.status();
    moe()->set_expert_bias(*v);
  } else if (name == "capacity-factor") {
    absl::StatusOr<double> v = ParseDoubleFlag(flag, value, 0, 1e9);
    if (!v.ok()) return v.status();
    moe()->set_capacity_factor(*v);
  } else if (name == "mla-q-lora-rank") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { mla()->set_q_lora_rank(static_cast<int32_t>(v)); });
  } else if (name == "mla-kv-lora-rank") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { mla()->set_kv_lora_rank(static_cast<int32_t>(v)); });
  } else if (name == "mla-qk-nope-head-dim") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { mla()->set_qk_nope_head_dim(static_cast<int32_t>(v)); });
  } else if (name == "mla-qk-rope-head-dim") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { mla()->set_qk_rope_head_dim(static_cast<int32_t>(v)); });
  } else if (name == "mla-v-head-dim") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { mla()->set_v_head_dim(static_cast<int32_t>(v)); });
  } else if (name == "attention-window") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { m->set_attention_window(static_cast<int32_t>(v)); });
  } else if (name == "full-attention-every") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { m->set_full_attention_every(static_cast<int32_t>(v)); });
  } else if (name == "layer-pattern") {
    if (absl::Status st = non_empty(); !st.ok()) return st;
    m->set_layer_pattern(value);
  } else if (name == "mamba-heads") {
    return set_int(0, kInt32Max, [&](int64_t v) { m->set_mamba_heads(static_cast<int32_t>(v)); });
  } else if (name == "mamba-head-dim") {
    return set_int(0, kInt32Max,
                   [&](int64_t v) { m->set_mamba_head_dim(static_cast<int32_t>(v)); });
  } else if (name == "mamba-state") {
    return set_int(0, kInt32Max, [&](int64_t v) { m->set_mamba_state(static_cast<int32_t>(v)); });
  } else if (name == "mamba-groups") {
    return set_int(0, kInt32Max, [&](int64_t v) { m->set_mamba_groups(static_cast<int32_t>(v)); });
  } else if (name == "mlp") {
    Mlp v;
    if (value.empty() || !ParseMlp(value, &v)) {
      return Usage(absl::StrCat(flag, ": '", value, "' is not ", KnownNames<Mlp>()));
    }
    m->set_mlp(static_cast<pb::Mlp>(v));
  } else if (name == "seq") {
    return set_int(1, kInt32Max, [&](int64_t v) { w->set_seq_len(static_cast<int32_t>(v)); });
  } else if (name == "global-batch") {
    return set_int(1, std::numeric_limits<int64_t>::max(),
                   [&](int64_t v) { w->set_global_batch(v); });
  } else if (name == "precision") {
    Precision v;
    if (value.empty() || !ParsePrecision(value, &v)) {
      return Usage(
          absl::StrCat(flag, ": '", value, "' is not one of ", KnownNames<Precision>(", ")));
    }
    w->set_precision(static_cast<pb::Precision>(v));
  } else if (name == "accelerator") {
    if (absl::Status st = non_empty(); !st.ok()) return st;
    c->set_accelerator(value);
  } else if (name == "gpus") {
    return set_int(1, kInt32Max, [&](int64_t v) { c->set_num_gpus(static_cast<int32_t>(v)); });
  } else if (name == "gpus-per-node") {
    return set_layout([&](int32_t v) { c->set_gpus_per_node(v); });
  } else if (name == "network-gbps") {
    absl::StatusOr<double> v = ParseDoubleFlag(flag, value, 0, 1e9);
    if (!v.ok()) return v.status();
    c->set_inter_node_gbps_per_gpu(*v);
  } else if (name == "tp") {
    return set_layout([&](int32_t v) { p->set_tp(v); });
  } else if (name == "pp") {
    return set_layout([&](int32_t v) { p->set_pp(v); });
  } else if (name == "vpp") {
    return set_layout([&](int32_t v) { p->set_vpp(v); });
  } else if (name == "cp") {
    return set_layout([&](int32_t v) { p->set_cp(v); });
  } else if (name == "dp") {
    return set_layout([&](int32_t v) { p->set_dp(v); });
  } else if (name == "ep") {
    return set_layout([&](int32_t v) { p->set_ep(v); });
  } else if (name == "etp") {
    return set_layout([&](int32_t v) { p->set_etp(v); });
  } else if (name == "shard-group") {
    return set_layout([&](int32_t v) { p->set_shard_group(v); });
  } else if (name == "micro-batch") {
    return set_layout([&](int32_t v) { p->set_micro_batch(v); });
  } else if (name == "sharding") {
    Sharding v;
    if (value.empty() || !(value == "auto" || ParseSharding(value, &v))) {
      return Usage(
          absl::StrCat(flag, ": '", value, "' is not one of ", KnownNames<Sharding>(", ")));
    }
    p->set_sharding(value == "auto" ? pb::SHARDING_UNSPECIFIED : static_cast<pb::Sharding>(v));
  } else if (name == "recompute") {
    Recompute v;
    if (value.empty() || !(value == "auto" || ParseRecompute(value, &v))) {
      return Usage(
          absl::StrCat(flag, ": '", value, "' is not one of ", KnownNames<Recompute>(", ")));
    }
    p->set_recompute(value == "auto" ? pb::RECOMPUTE_UNSPECIFIED : static_cast<pb::Recompute>(v));
  } else if (name == "recompute-modules") {
    uint32_t modules = 0;
    std::string unknown;
    if (!ParseRecomputeModules(value, &modules, &unknown)) {
      return Usage(
          absl::StrCat(flag, ": '", unknown, "' is not one of ", RecomputeModulesToString(~0u)));
    }
    if (modules == 0) {
      return Usage(absl::StrCat(flag, ": names no module (", RecomputeModulesToString(~0u), ")"));
    }
    p->clear_recompute_modules();
    for (std::string& m : RecomputeModuleNames(modules)) p->add_recompute_modules(std::move(m));
  } else if (name == "sequence-parallel") {
    absl::StatusOr<bool> v = ParseBoolFlag(flag, value);
    if (!v.ok()) return v.status();
    p->set_sequence_parallel(*v);
  } else if (name == "framework") {
    s->set_framework(value);
  } else if (name == "framework-version") {
    s->mutable_stack()->set_version(value);
  } else if (name == "fp8-recipe") {
    if (absl::Status st = non_empty(); !st.ok()) return st;
    s->mutable_stack()->set_fp8_recipe(value);
  } else if (name == "attention-kernel") {
    if (absl::Status st = non_empty(); !st.ok()) return st;
    s->mutable_stack()->set_attention_kernel(value);
  } else if (name == "tp-comm-overlap" || name == "dp-overlap" || name == "cuda-graphs" ||
             name == "compiled" || name == "fused-dispatch" || name == "ep-comm-overlap" ||
             name == "bf16-grads") {
    absl::StatusOr<bool> v = ParseBoolFlag(flag, value);
    if (!v.ok()) return v.status();
    pb::Stack* st = s->mutable_stack();
    if (name == "tp-comm-overlap") st->set_tp_comm_overlap(*v);
    if (name == "dp-overlap") st->set_dp_overlap(*v);
    if (name == "cuda-graphs") st->set_cuda_graphs(*v);
    if (name == "compiled") st->set_compiled(*v);
    if (name == "fused-dispatch") st->set_fused_dispatch(*v);
    if (name == "ep-comm-overlap") st->set_ep_comm_overlap(*v);
    if (name == "bf16-grads") st->set_bf16_grads(*v);
  } else if (name == "calibration") {
    s->set_calibration(value);
  } else if (name == "label") {
    s->set_label(value);
  }
  return absl::OkStatus();
}

std::string JsonError(const google::protobuf::util::Status& s) {
  return std::string(s.message().data(), s.message().size());
}

}  // namespace

absl::StatusOr<int64_t> ParseIntFlag(const std::string& flag, const std::string& value, int64_t lo,
                                     int64_t hi) {
  int64_t v = 0;
  const std::string s(absl::StripAsciiWhitespace(value));
  if (!absl::SimpleAtoi(s, &v)) {
    return Usage(absl::StrCat(flag, ": '", value, "' is not an integer"));
  }
  if (v < lo || v > hi) {
    return Usage(absl::StrCat(flag, ": ", v, " is out of range [", lo, ", ", hi, "]"));
  }
  return v;
}

absl::StatusOr<double> ParseDoubleFlag(const std::string& flag, const std::string& value, double lo,
                                       double hi) {
  double v = 0;
  const std::string s(absl::StripAsciiWhitespace(value));
  if (!absl::SimpleAtod(s, &v) || !std::isfinite(v)) {
    return Usage(absl::StrCat(flag, ": '", value, "' is not a number"));
  }
  if (v < lo || v > hi) {
    return Usage(absl::StrCat(flag, ": ", value, " is out of range [", lo, ", ", hi, "]"));
  }
  return v;
}

absl::StatusOr<std::vector<int64_t>> ParseIntList(const std::string& flag, const std::string& value,
                                                  int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  for (absl::string_view item : absl::StrSplit(value, ',')) {
    if (absl::StripAsciiWhitespace(item).empty()) {
      return Usage(absl::StrCat(flag, ": empty item in '", value, "'"));
    }
    absl::StatusOr<int64_t> v = ParseIntFlag(flag, std::string(item), lo, hi);
    if (!v.ok()) return v.status();
    out.push_back(*v);
  }
  return out;
}

absl::StatusOr<std::vector<pb::Scenario>> ReadRequestFile(const std::string& path,
                                                          bool allow_many) {
  absl::StatusOr<std::string> text = ReadFile("--request", path);
  if (!text.ok()) return text.status();
  google::protobuf::util::JsonParseOptions options;  // strict: unknown fields are errors
  pb::PredictRequest predict;
  google::protobuf::util::Status ps = JsonStringToMessage(*text, &predict, options);
  if (ps.ok() && predict.has_scenario()) return std::vector<pb::Scenario>{predict.scenario()};
  pb::Scenario scenario;
  google::protobuf::util::Status ss = JsonStringToMessage(*text, &scenario, options);
  if (ss.ok()) return std::vector<pb::Scenario>{scenario};
  pb::CompareRequest compare;
  google::protobuf::util::Status cs = JsonStringToMessage(*text, &compare, options);
  const bool looks_compare = absl::StrContains(*text, "\"scenarios\"");
  if (cs.ok() && looks_compare) {
    if (!allow_many && compare.scenarios_size() != 1) {
      return Usage(absl::StrCat("--request ", path, ": holds ", compare.scenarios_size(),
                                " scenarios; only `compare` takes several"));
    }
    if (compare.scenarios_size() == 0) {
      return Usage(absl::StrCat("--request ", path, ": no scenarios"));
    }
    return std::vector<pb::Scenario>(compare.scenarios().begin(), compare.scenarios().end());
  }
  const std::string why = looks_compare                              ? JsonError(cs)
                          : absl::StrContains(*text, "\"scenario\"") ? JsonError(ps)
                                                                     : JsonError(ss);
  return Usage(absl::StrCat("--request ", path,
                            ": not a Scenario or PredictRequest in protobuf JSON: ", why));
}

absl::StatusOr<std::vector<pb::Scenario>> BuildScenarios(const ParsedArgs& args, bool allow_lists,
                                                         const std::vector<std::string>& skip) {
  std::vector<pb::Scenario> bases;
  const std::vector<std::string> files = args.All("request");
  if (files.size() > 1 && !allow_lists) {
    return Usage("--request: only `compare` takes several request files");
  }
  for (const std::string& f : files) {
    absl::StatusOr<std::vector<pb::Scenario>> s = ReadRequestFile(f, allow_lists);
    if (!s.ok()) return s.status();
    bases.insert(bases.end(), s->begin(), s->end());
  }
  if (bases.empty()) bases.emplace_back();

  // Each scenario flag once, at its first position, with its last value; lists split.
  std::vector<std::pair<std::string, std::vector<std::string>>> dims;
  std::map<std::string, size_t> index;
  for (const auto& [name, value] : args.flags) {
    if (!IsScenarioFlag(name) || name == "request") continue;
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    std::vector<std::string> items{value};
    if (ListCapable(name) && absl::StrContains(value, ',')) {
      if (!allow_lists) {
        return Usage(absl::StrCat("--", name, ": takes one value here, got '", value,
                                  "' (lists are for `compare`)"));
      }
      items = absl::StrSplit(value, ',');
      for (std::string& item : items) {
        item = std::string(absl::StripAsciiWhitespace(item));
        if (item.empty()) return Usage(absl::StrCat("--", name, ": empty item in '", value, "'"));
      }
    }
    auto it = index.find(name);
    if (it == index.end()) {
      index[name] = dims.size();
      dims.emplace_back(name, std::move(items));
    } else {
      dims[it->second].second = std::move(items);
    }
  }
  // Check every value once, so a bad item is reported even if it would come late.
  for (const auto& [name, items] : dims) {
    for (const std::string& item : items) {
      pb::Scenario scratch;
      if (absl::Status st = ApplyScenarioFlag(name, item, &scratch); !st.ok()) return st;
    }
  }
  std::vector<pb::Scenario> out;
  for (const pb::Scenario& base : bases) {
    std::vector<size_t> pick(dims.size(), 0);
    while (true) {
      pb::Scenario s = base;
      for (size_t d = 0; d < dims.size(); ++d) {
        if (absl::Status st = ApplyScenarioFlag(dims[d].first, dims[d].second[pick[d]], &s);
            !st.ok()) {
          return st;
        }
      }
      out.push_back(std::move(s));
      // Odometer: the last flag varies fastest.
      bool done = true;
      for (size_t d = dims.size(); d > 0; --d) {
        if (++pick[d - 1] < dims[d - 1].second.size()) {
          done = false;
          break;
        }
        pick[d - 1] = 0;
      }
      if (done) break;
    }
  }
  return out;
}

absl::Status CheckRequired(const std::vector<pb::Scenario>& scenarios, bool need_gpus) {
  std::vector<std::string> missing;
  auto need = [&](bool absent, const char* flag) {
    if (absent && std::find(missing.begin(), missing.end(), flag) == missing.end()) {
      missing.push_back(flag);
    }
  };
  for (const pb::Scenario& s : scenarios) {
    const pb::ModelSpec& m = s.workload().model();
    need(m.name().empty() && m.layers() == 0 && m.hf_config_json().empty(), "--model");
    need(s.cluster().accelerator().empty(), "--accelerator");
    need(need_gpus && s.cluster().num_gpus() == 0, "--gpus");
    need(s.workload().seq_len() == 0, "--seq");
    need(s.workload().global_batch() == 0, "--global-batch");
  }
  if (missing.empty()) return absl::OkStatus();
  std::string list = missing.front();
  for (size_t i = 1; i < missing.size(); ++i) {
    absl::StrAppend(&list, i + 1 == missing.size() ? " and " : ", ", missing[i]);
  }
  return Usage(absl::StrCat(list, missing.size() == 1 ? " is" : " are", " required"));
}

absl::StatusOr<pb::MeasurementFilter> BuildFilter(const ParsedArgs& args) {
  pb::MeasurementFilter f;
  if (const std::string* v = args.Last("accelerator")) f.set_accelerator(*v);
  if (const std::string* v = args.Last("framework")) f.set_framework(*v);
  if (const std::string* v = args.Last("source")) f.set_source(*v);
  for (const std::string& kv : args.All("label")) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Usage(absl::StrCat("--label: '", kv, "' is not KEY=VALUE"));
    }
    (*f.mutable_labels())[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return f;
}

}  // namespace scalecast::cli
