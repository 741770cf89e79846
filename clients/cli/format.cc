#include "clients/cli/format.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "clients/cli/table.h"
#include "model/field_rules_gen.h"

namespace scalecast::cli {
namespace {

// "SHARDING_FSDP" -> "fsdp"; the unspecified value -> `unset`.
std::string EnumWord(const std::string& name, size_t prefix, const std::string& unset) {
  if (absl::EndsWith(name, "_UNSPECIFIED") || name.size() <= prefix) return unset;
  return absl::AsciiStrToLower(name.substr(prefix));
}

std::string ShardingWord(pb::Sharding s, const std::string& unset = "auto") {
  return EnumWord(pb::Sharding_Name(s), 9, unset);
}
std::string RecomputeWord(pb::Recompute r, const std::string& unset = "auto") {
  return EnumWord(pb::Recompute_Name(r), 10, unset);
}
std::string PrecisionWord(pb::Precision p, const std::string& unset = "") {
  return EnumWord(pb::Precision_Name(p), 10, unset);
}
std::string MlpWord(pb::Mlp m, const std::string& unset = "") {
  return EnumWord(pb::Mlp_Name(m), 4, unset);
}

double CommSum(const pb::Prediction& p, bool exposed) {
  double s = 0;
  for (const pb::CommTime& c : p.time().comm()) s += exposed ? c.exposed_s() : c.total_s();
  return s;
}

// "851.2-947.9"; "" when the server sent no band.
std::string BandShort(const pb::Prediction& p) {
  const pb::Uncertainty& u = p.uncertainty();
  if (u.level() <= 0 || u.high() <= 0) return "";
  return absl::StrCat(Thousands(u.low(), 1), "-", Thousands(u.high(), 1));
}

// "on, fp8 recipe delayed, ...": the stack features the scenario sets; "" when none.
std::string StackWords(const pb::Stack& st) {
  std::vector<std::string> parts;
  auto onoff = [&](bool has, bool v, const char* what) {
    if (has) parts.push_back(absl::StrCat(what, v ? " on" : " off"));
  };
  onoff(st.has_tp_comm_overlap(), st.tp_comm_overlap(), "TP comm overlap");
  onoff(st.has_dp_overlap(), st.dp_overlap(), "DP overlap");
  if (!st.fp8_recipe().empty()) parts.push_back("fp8 recipe " + st.fp8_recipe());
  if (!st.attention_kernel().empty()) parts.push_back("attention " + st.attention_kernel());
  if (!st.cp_comm_type().empty()) parts.push_back("context parallelism by " + st.cp_comm_type());
  onoff(st.has_cuda_graphs(), st.cuda_graphs(), "CUDA graphs");
  if (st.full_step_graph()) parts.push_back("the whole step in one CUDA graph");
  if (st.fp8_attention()) parts.push_back("attention in fp8");
  if (st.fp32_params()) parts.push_back("fp32 parameters under autocast");
  onoff(st.has_fused_kernels(), st.fused_kernels(), "hand-fused kernels");
  onoff(st.has_compiled(), st.compiled(), "compiled");
  if (st.bf16_grads()) parts.push_back("gradients in bf16");  // shown only when on (rare)
  if (st.fp8_param_gather()) parts.push_back("parameters gathered in fp8");
  // The server echoes the MoE dispatcher's switches for a MoE model only (server/service.cc,
  // EchoStack), so their presence says the model has experts.
  if (st.has_fused_dispatch()) {
    parts.push_back(st.fused_dispatch() ? "MoE dispatch fused (DeepEP/HybridEP)"
                                        : "MoE dispatch all-to-all");
  }
  onoff(st.has_ep_comm_overlap(), st.ep_comm_overlap(), "EP all-to-all overlap");
  return absl::StrJoin(parts, ", ");
}

// "8 GPUs/node, 400 Gbit/s per GPU between nodes" (or the defaults' words when unresolved).
std::string NodeWords(const pb::Cluster& c) {
  std::string out =
      c.gpus_per_node() > 0 ? absl::StrCat(c.gpus_per_node(), " GPUs/node") : "the usual node size";
  absl::StrAppend(&out, ", ",
                  c.inter_node_gbps_per_gpu() > 0
                      ? absl::StrCat(Significant(c.inter_node_gbps_per_gpu(), 3),
                                     " Gbit/s per GPU between nodes")
                      : "the usual network");
  if (c.inter_node_latency_us() > 0) {
    absl::StrAppend(&out, ", ", Significant(c.inter_node_latency_us(), 3),
                    " us a collective step across nodes");
  }
  return out;
}

std::string FrameworkWords(const pb::Scenario& s) {
  std::string out = s.framework().empty() ? "generic" : s.framework();
  if (!s.stack().version().empty()) absl::StrAppend(&out, " ", s.stack().version());
  return out;
}

// One field of a scenario, in words, for telling compared scenarios apart.
struct Field {
  std::string (*get)(const pb::Scenario&);
};

std::string ModelField(const pb::Scenario& s) {
  return s.workload().model().name().empty() ? "custom model" : s.workload().model().name();
}
std::string AccelField(const pb::Scenario& s) { return s.cluster().accelerator(); }
std::string GpusField(const pb::Scenario& s) {
  return absl::StrCat(s.cluster().num_gpus(), " GPUs");
}
std::string PrecisionField(const pb::Scenario& s) {
  return PrecisionWord(s.workload().precision(), "default precision");
}
std::string SeqField(const pb::Scenario& s) { return absl::StrCat("seq ", s.workload().seq_len()); }
std::string BatchField(const pb::Scenario& s) {
  return absl::StrCat("batch ", s.workload().global_batch());
}
std::string FrameworkField(const pb::Scenario& s) { return FrameworkWords(s); }
std::string CalibrationField(const pb::Scenario& s) {
  return absl::StrCat("calibration ", s.calibration().empty() ? "default" : s.calibration());
}
std::string NodeField(const pb::Scenario& s) {
  return s.cluster().gpus_per_node() > 0 ? absl::StrCat(s.cluster().gpus_per_node(), "/node")
                                         : "usual node";
}
std::string NetworkField(const pb::Scenario& s) {
  return s.cluster().inter_node_gbps_per_gpu() > 0
             ? absl::StrCat(Significant(s.cluster().inter_node_gbps_per_gpu(), 3), " Gb/s")
             : "usual network";
}
std::string StackField(const pb::Scenario& s) { return StackWords(s.stack()); }

const std::vector<Field>& CompareFields() {
  static const auto* fields =
      new std::vector<Field>{{ModelField}, {AccelField},   {GpusField},      {PrecisionField},
                             {SeqField},   {BatchField},   {FrameworkField}, {CalibrationField},
                             {NodeField},  {NetworkField}, {StackField}};
  return *fields;
}

bool Differs(const Field& f, const std::vector<pb::Scenario>& all) {
  for (const pb::Scenario& o : all) {
    if (f.get(o) != f.get(all.front())) return true;
  }
  return false;
}

// The fields that tell this scenario apart from the others ("128 GPUs", "h200-sxm-141gb fp8").
std::string CompareName(const pb::Scenario& s, const std::vector<pb::Scenario>& all) {
  if (!s.label().empty()) return s.label();
  std::vector<std::string> parts;
  for (const Field& f : CompareFields()) {
    if (Differs(f, all)) parts.push_back(f.get(s));
  }
  return parts.empty() ? "same scenario" : absl::StrJoin(parts, " ");
}

// What the compared scenarios share, after "Compared: ", wrapped to the table width.
std::string CompareCommon(const std::vector<pb::Scenario>& all) {
  if (all.empty()) return "";
  // Each field's comma-separated words wrap on their own (the stack's list is wider than a line).
  std::vector<std::string> parts;
  for (const Field& f : CompareFields()) {
    if (Differs(f, all)) continue;
    const std::string field = f.get(all.front());
    for (absl::string_view words : absl::StrSplit(field, ", ", absl::SkipEmpty())) {
      parts.emplace_back(words);
    }
  }
  std::string out;
  size_t line = std::string("Compared: ").size();
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string piece = parts[i] + (i + 1 < parts.size() ? "," : "");
    if (i > 0 && line + 1 + piece.size() > kTableWidth) {
      absl::StrAppend(&out, "\n  ");
      line = 2;
    } else if (i > 0) {
      absl::StrAppend(&out, " ");
      ++line;
    }
    absl::StrAppend(&out, piece);
    line += piece.size();
  }
  return out;
}

std::string Warnings(const pb::Prediction& p) {
  if (p.warnings().empty()) return "";
  std::string out = "\nWarnings\n";
  for (const std::string& w : p.warnings()) absl::StrAppend(&out, "  - ", w, "\n");
  return out;
}

}  // namespace

std::string MoeWords(const pb::ModelSpec& m) {
  const pb::MoeSpec& e = m.moe();
  if (e.num_experts() <= 0) return "";
  std::vector<std::string> parts{absl::StrCat(
      e.num_experts(), " routed, top-", e.experts_per_token(), ", ffn ", e.expert_ffn_hidden())};
  if (e.shared_experts() > 0) {
    parts.push_back(absl::StrCat(
        e.shared_experts(), " shared",
        e.shared_ffn_hidden() > 0 ? absl::StrCat(" (ffn ", e.shared_ffn_hidden(), ")") : ""));
  }
  if (e.dense_layers() > 0) parts.push_back(absl::StrCat(e.dense_layers(), " dense layers"));
  if (e.expert_bias()) parts.push_back("biased experts");
  if (e.latent_size() > 0) parts.push_back(absl::StrCat("latent ", e.latent_size()));
  if (e.router_groups() > 0) {
    parts.push_back(
        absl::StrCat("top-", e.router_group_topk(), " of ", e.router_groups(), " groups"));
  }
  parts.push_back(e.capacity_factor() > 0
                      ? absl::StrCat("capacity factor ", Significant(e.capacity_factor(), 3))
                      : "dropless");
  return absl::StrJoin(parts, ", ");
}

std::string AttentionWords(const pb::ModelSpec& m) {
  std::vector<std::string> parts;
  const pb::MlaSpec& a = m.mla();
  if (a.kv_lora_rank() > 0) {
    parts.push_back(absl::StrCat("MLA: q rank ", a.q_lora_rank(), ", kv rank ", a.kv_lora_rank(),
                                 ", qk ", a.qk_nope_head_dim(), "+", a.qk_rope_head_dim(),
                                 " rope, v ", a.v_head_dim()));
  }
  if (m.attention_window() > 0) {
    parts.push_back(m.full_attention_every() > 0
                        ? absl::StrCat("window ", m.attention_window(), ", every ",
                                       m.full_attention_every(), " layers full")
                        : absl::StrCat("window ", m.attention_window(), " on every layer"));
  }
  if (!m.layer_pattern().empty()) {
    int mamba = 0, attention = 0, dense = 0, moe = 0;
    for (char c : m.layer_pattern()) {
      mamba += c == 'M';
      attention += c == '*';
      dense += c == '-';
      moe += c == 'E';
    }
    parts.push_back(absl::StrCat("hybrid: ", mamba, " Mamba-2 (", m.mamba_heads(), " heads x ",
                                 m.mamba_head_dim(), ", state ", m.mamba_state(), "), ", attention,
                                 " attention, ", moe, " MoE, ", dense, " MLP layers"));
  }
  return absl::StrJoin(parts, "; ");
}

std::string LayoutShort(const pb::Parallelism& p) {
  std::vector<std::string> parts{absl::StrCat("tp", p.tp()), absl::StrCat("pp", p.pp())};
  if (p.vpp() > 1) parts.push_back(absl::StrCat("vpp", p.vpp()));
  if (p.cp() > 1) parts.push_back(absl::StrCat("cp", p.cp()));
  if (p.cp_a2a() > 0) parts.push_back(absl::StrCat("a2a", p.cp_a2a()));
  if (p.dp() > 0) parts.push_back(absl::StrCat("dp", p.dp()));
  if (p.ep() > 1) parts.push_back(absl::StrCat("ep", p.ep()));
  if (p.etp() > 1) parts.push_back(absl::StrCat("etp", p.etp()));
  std::string sharding = ShardingWord(p.sharding(), "");
  if (p.sharding() == pb::SHARDING_HSDP && p.shard_group() > 0) {
    absl::StrAppend(&sharding, p.shard_group());
  }
  if (!sharding.empty()) parts.push_back(sharding);
  if (p.micro_batch() > 0) parts.push_back(absl::StrCat("mb", p.micro_batch()));
  if (p.recompute() == pb::RECOMPUTE_NONE) parts.push_back("rc=none");
  if (p.recompute() == pb::RECOMPUTE_SELECTIVE && p.recompute_modules_size() > 0) {
    parts.push_back(absl::StrCat("rc=", absl::StrJoin(p.recompute_modules(), "+")));
  } else if (p.recompute() == pb::RECOMPUTE_SELECTIVE) {
    parts.push_back("rc=sel");
  }
  if (p.recompute() == pb::RECOMPUTE_FULL) {
    parts.push_back(p.recompute_layers() > 0 ? absl::StrCat("rc=full:", p.recompute_layers())
                                             : "rc=full");
  }
  if (p.cpu_offload_layers() > 0) parts.push_back(absl::StrCat("offload:", p.cpu_offload_layers()));
  if (p.sequence_parallel()) parts.push_back("sp");
  return absl::StrJoin(parts, " ");
}

std::string ScenarioTitle(const pb::Scenario& s) {
  const std::string model =
      s.workload().model().name().empty() ? "custom model" : s.workload().model().name();
  return absl::StrCat(model, " on ", s.cluster().num_gpus(), " x ", s.cluster().accelerator());
}

std::string XmlEscape(absl::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

// "llama2-70b (80 layers, hidden 8192, ...)": the name and every shape field set.
std::string ModelWords(const pb::ModelSpec& m) {
  std::string model = m.name().empty() ? "custom" : m.name();
  std::vector<std::string> shape;
  if (m.layers() > 0) shape.push_back(absl::StrCat(m.layers(), " layers"));
  if (m.hidden() > 0) shape.push_back(absl::StrCat("hidden ", m.hidden()));
  if (m.heads() > 0) shape.push_back(absl::StrCat(m.heads(), " heads"));
  if (m.kv_heads() > 0) shape.push_back(absl::StrCat(m.kv_heads(), " kv heads"));
  if (m.ffn_hidden() > 0) shape.push_back(absl::StrCat("ffn ", m.ffn_hidden()));
  if (m.mlp() != pb::MLP_UNSPECIFIED) shape.push_back(MlpWord(m.mlp()) + " mlp");
  if (m.vocab() > 0) shape.push_back(absl::StrCat("vocab ", m.vocab()));
  if (m.head_dim() > 0) shape.push_back(absl::StrCat("head dim ", m.head_dim()));
  if (m.mtp_layers() > 0) {
    shape.push_back(absl::StrCat(m.mtp_layers(), " multi-token prediction module",
                                 m.mtp_layers() > 1 ? "s" : ""));
  }
  if (!shape.empty()) absl::StrAppend(&model, " (", absl::StrJoin(shape, ", "), ")");
  return model;
}

// The scenario as the server resolved it: label, model, workload, cluster, software, layout.
std::string PredictHead(const pb::Scenario& s, const pb::PredictResponse& response) {
  const pb::Prediction& p = response.prediction();
  const pb::ModelSpec& m = s.workload().model();
  std::vector<std::pair<std::string, std::string>> head;
  if (!p.label().empty()) head.emplace_back("Label", p.label());
  head.emplace_back("Model", ModelWords(m));
  if (const std::string moe = MoeWords(m); !moe.empty()) head.emplace_back("Experts", moe);
  if (const std::string attn = AttentionWords(m); !attn.empty()) {
    head.emplace_back("Attention", attn);
  }
  const int64_t tokens = s.workload().global_batch() * s.workload().seq_len();
  head.emplace_back(
      "Workload",
      absl::StrCat("seq ", s.workload().seq_len(), ", global batch ", s.workload().global_batch(),
                   " sequences (", Compact(tokens), " tokens), ",
                   PrecisionWord(s.workload().precision(), "default precision")));
  head.emplace_back("Cluster",
                    absl::StrCat(s.cluster().num_gpus(), " x ", s.cluster().accelerator(), ", ",
                                 NodeWords(s.cluster())));
  head.emplace_back("Software",
                    absl::StrCat("framework ", FrameworkWords(s), ", calibration ",
                                 !response.calibration().empty()
                                     ? response.calibration()
                                     : (s.calibration().empty() ? "default" : s.calibration()),
                                 ", model version ", response.model_version()));
  if (const std::string stack = StackWords(s.stack()); !stack.empty()) {
    head.emplace_back("Stack", stack);
  }
  head.emplace_back("Layout", LayoutShort(p.layout()));
  return KeyValues(head, "");
}

std::string PerformanceSection(const pb::Prediction& p) {
  std::vector<std::pair<std::string, std::string>> perf{
      {"step time", Seconds(p.step_time_s())},
      {"tokens/s", Thousands(p.tokens_per_s()) + " total"},
      {"tokens/s per GPU", Thousands(p.tokens_per_s_per_gpu(), 1)}};
  if (!BandShort(p).empty()) {
    perf.emplace_back(absl::StrCat(Fixed(p.uncertainty().level() * 100, 0), "% band"),
                      absl::StrCat(BandShort(p), " tokens/s per GPU"));
    if (!p.uncertainty().basis().empty()) perf.emplace_back("band basis", p.uncertainty().basis());
  }
  perf.emplace_back("MFU / HFU", Percent(p.mfu()) + " / " + Percent(p.hfu()));
  perf.emplace_back("model TFLOP/s per GPU", Fixed(p.model_tflops_per_gpu(), 1));
  return absl::StrCat("\nPerformance\n", KeyValues(perf));
}

// The step's critical path by part, then each collective: total, exposed, hidden, bytes, ranks.
std::string TimeSection(const pb::Prediction& p) {
  const pb::TimeBreakdown& t = p.time();
  const double step = p.step_time_s();
  auto share = [&](double v) { return step > 0 ? Percent(v / step) : ""; };
  Table time({{"part", true}, {"seconds"}, {"of step"}});
  time.AddRow({"compute", Seconds(t.compute_s()), share(t.compute_s())});
  time.AddRow({"recompute", Seconds(t.recompute_s()), share(t.recompute_s())});
  time.AddRow({"pipeline bubble", Seconds(t.pipeline_bubble_s()), share(t.pipeline_bubble_s())});
  time.AddRow({"optimizer", Seconds(t.optimizer_s()), share(t.optimizer_s())});
  time.AddRow({"exposed communication", Seconds(CommSum(p, true)), share(CommSum(p, true))});
  std::string out = absl::StrCat("\nTime per step (critical path)\n", time.Render("  "));
  if (t.comm().empty()) return out;
  Table comm({{"kind", true}, {"total"}, {"exposed"}, {"hidden"}, {"bytes/GPU"}, {"ranks"}});
  for (const pb::CommTime& c : t.comm()) {
    const double hidden = c.total_s() > 0 ? 1 - c.exposed_s() / c.total_s() : 0;
    comm.AddRow({c.kind(), Seconds(c.total_s()), Seconds(c.exposed_s()),
                 c.total_s() > 0 ? Percent(hidden, 0) : "-", Bytes(c.bytes_per_gpu()),
                 absl::StrCat(c.ranks())});
  }
  absl::StrAppend(&out, "\nCommunication per step\n", comm.Render("  "));
  return out;
}

std::string MemorySection(const pb::MemoryBreakdown& mem) {
  auto gib = [](double bytes) { return Fixed(bytes / 1073741824.0, 2); };
  Table memory({{"part", true}, {"GiB"}});
  memory.AddRow({"weights", gib(mem.weights_bytes())});
  memory.AddRow({"gradients", gib(mem.gradients_bytes())});
  memory.AddRow({"optimizer", gib(mem.optimizer_bytes())});
  memory.AddRow({"activations", gib(mem.activations_bytes())});
  memory.AddRow({"other", gib(mem.other_bytes())});
  memory.AddRow({"total", gib(mem.total_bytes())});
  memory.AddRow({"capacity", gib(mem.capacity_bytes())});
  if (mem.host_bytes() > 0) {
    memory.AddRow({"host (offloaded)", gib(mem.host_bytes())});
    memory.AddRow({"host capacity", gib(mem.host_capacity_bytes())});
  }
  return absl::StrCat("\nMemory per GPU\n", memory.Render("  "),
                      "  fits: ", mem.fits() ? "yes" : "NO", " (",
                      mem.capacity_bytes() > 0
                          ? Percent(static_cast<double>(mem.total_bytes()) / mem.capacity_bytes())
                          : "-",
                      " of capacity)\n");
}

std::string PowerSection(const pb::Prediction& p) {
  return absl::StrCat(
      "\nPower\n",
      KeyValues({{"per GPU", Thousands(p.power().watts_per_gpu()) + " W"},
                 {"cluster", Thousands(p.power().cluster_kw(), 1) + " kW"},
                 {"energy", Significant(p.power().joules_per_token(), 3) + " J/token"}}));
}

}  // namespace

std::string FormatPredictTable(const pb::Scenario& request, const pb::PredictResponse& response) {
  const pb::Prediction& p = response.prediction();
  // The server echoes the scenario as it resolved it; an older server does not.
  const pb::Scenario& s = response.has_scenario() ? response.scenario() : request;
  return absl::StrCat(PredictHead(s, response), PerformanceSection(p), TimeSection(p),
                      MemorySection(p.memory()), PowerSection(p), Warnings(p));
}

namespace {

// One column of a prediction's CSV row: its header and what fills it.
using PredictionColumn = CsvOutColumn<pb::Scenario, pb::Prediction>;

// A column of the prediction's number `get` (CsvNumber), or of the layout's integer.
PredictionColumn Number(std::string name, double (*get)(const pb::Prediction&)) {
  return {std::move(name),
          [get](const pb::Scenario&, const pb::Prediction& p) { return CsvNumber(get(p)); }};
}
PredictionColumn LayoutInt(std::string name, int32_t (pb::Parallelism::*get)() const) {
  return {std::move(name), [get](const pb::Scenario&, const pb::Prediction& p) {
            return absl::StrCat((p.layout().*get)());
          }};
}
// A band column: empty when the server sent no band.
PredictionColumn Band(std::string name, double (pb::Uncertainty::*get)() const) {
  return {std::move(name), [get](const pb::Scenario&, const pb::Prediction& p) {
            const pb::Uncertainty& u = p.uncertainty();
            return u.level() > 0 ? CsvNumber((u.*get)()) : std::string();
          }};
}

// The total, exposed and bytes columns of one communication kind (summed over its entries).
void AddCommColumns(const std::string& kind, std::vector<PredictionColumn>* out) {
  auto sum = [kind](const pb::Prediction& p, int what) {
    double v = 0;
    for (const pb::CommTime& c : p.time().comm()) {
      if (c.kind() != kind) continue;
      v += what == 0 ? c.total_s() : what == 1 ? c.exposed_s() : c.bytes_per_gpu();
    }
    return v;
  };
  out->push_back({kind + "_total_s", [sum](const pb::Scenario&, const pb::Prediction& p) {
                    return CsvNumber(sum(p, 0));
                  }});
  out->push_back({kind + "_exposed_s", [sum](const pb::Scenario&, const pb::Prediction& p) {
                    return CsvNumber(sum(p, 1));
                  }});
  out->push_back({kind + "_bytes_per_gpu", [sum](const pb::Scenario&, const pb::Prediction& p) {
                    return absl::StrCat(static_cast<int64_t>(sum(p, 2)));
                  }});
}

// The communication kinds (field_rules::CommKind, written from the proto's enum) whose columns
// sit in the middle of the row, where the CSV first had them (dp_allgather through cp); a kind
// declared after them gets its columns at the end.
bool InTheMiddle(field_rules::CommKind k) { return k <= field_rules::CommKind::kCp; }

// Each communication kind with its name, in the proto's order.
template <typename F>
void ForEachCommKind(F&& f) {
  for (size_t i = 0; i < std::size(field_rules::kCommKindNames); ++i) {
    f(static_cast<field_rules::CommKind>(i), field_rules::kCommKindNames[i]);
  }
}

// The CSV's columns, each declared once: its header and its cell. A column added later goes
// last, so that the ones before keep their positions.
const std::vector<PredictionColumn>& PredictionColumns() {
  static const auto* columns = [] {
    using S = const pb::Scenario&;
    using P = const pb::Prediction&;
    auto* c = new std::vector<PredictionColumn>{
        {"label", [](S, P p) { return p.label(); }},
        {"model", [](S s, P) { return s.workload().model().name(); }},
        {"accelerator", [](S s, P) { return s.cluster().accelerator(); }},
        {"num_gpus", [](S s, P) { return absl::StrCat(s.cluster().num_gpus()); }},
        {"gpus_per_node", [](S s, P) { return absl::StrCat(s.cluster().gpus_per_node()); }},
        {"inter_node_gbps_per_gpu",
         [](S s, P) { return CsvNumber(s.cluster().inter_node_gbps_per_gpu()); }},
        {"precision", [](S s, P) { return PrecisionWord(s.workload().precision()); }},
        {"seq_len", [](S s, P) { return absl::StrCat(s.workload().seq_len()); }},
        {"global_batch", [](S s, P) { return absl::StrCat(s.workload().global_batch()); }},
        {"framework",
         [](S s, P) { return s.framework().empty() ? std::string("generic") : s.framework(); }},
        {"framework_version", [](S s, P) { return s.stack().version(); }},
        {"calibration",
         [](S s, P) { return s.calibration().empty() ? std::string("default") : s.calibration(); }},
        {"layout", [](S, P p) { return LayoutShort(p.layout()); }},
        LayoutInt("tp", &pb::Parallelism::tp),
        LayoutInt("pp", &pb::Parallelism::pp),
        LayoutInt("vpp", &pb::Parallelism::vpp),
        LayoutInt("cp", &pb::Parallelism::cp),
        LayoutInt("dp", &pb::Parallelism::dp),
        {"sharding", [](S, P p) { return ShardingWord(p.layout().sharding(), ""); }},
        LayoutInt("shard_group", &pb::Parallelism::shard_group),
        LayoutInt("micro_batch", &pb::Parallelism::micro_batch),
        {"recompute", [](S, P p) { return RecomputeWord(p.layout().recompute(), ""); }},
        {"sequence_parallel",
         [](S, P p) { return std::string(p.layout().sequence_parallel() ? "true" : "false"); }},
        Number("step_time_s", [](P p) { return p.step_time_s(); }),
        Number("tokens_per_s", [](P p) { return p.tokens_per_s(); }),
        Number("tokens_per_s_per_gpu", [](P p) { return p.tokens_per_s_per_gpu(); }),
        Band("tokens_per_s_per_gpu_low", &pb::Uncertainty::low),
        Band("tokens_per_s_per_gpu_high", &pb::Uncertainty::high),
        Band("band_level", &pb::Uncertainty::level),
        {"band_basis", [](S, P p) { return p.uncertainty().basis(); }},
        Number("mfu", [](P p) { return p.mfu(); }),
        Number("hfu", [](P p) { return p.hfu(); }),
        Number("model_tflops_per_gpu", [](P p) { return p.model_tflops_per_gpu(); }),
        Number("compute_s", [](P p) { return p.time().compute_s(); }),
        Number("recompute_s", [](P p) { return p.time().recompute_s(); }),
        Number("pipeline_bubble_s", [](P p) { return p.time().pipeline_bubble_s(); }),
        Number("optimizer_s", [](P p) { return p.time().optimizer_s(); }),
        Number("comm_total_s", [](P p) { return CommSum(p, false); }),
        Number("comm_exposed_s", [](P p) { return CommSum(p, true); }),
    };
    ForEachCommKind([c](field_rules::CommKind k, const char* name) {
      if (InTheMiddle(k)) AddCommColumns(name, c);
    });
    using M = const pb::MemoryBreakdown&;
    for (auto [name, get] : std::initializer_list<std::pair<const char*, int64_t (*)(M)>>{
             {"weights_bytes", [](M m) { return m.weights_bytes(); }},
             {"gradients_bytes", [](M m) { return m.gradients_bytes(); }},
             {"optimizer_bytes", [](M m) { return m.optimizer_bytes(); }},
             {"activations_bytes", [](M m) { return m.activations_bytes(); }},
             {"other_bytes", [](M m) { return m.other_bytes(); }},
             {"memory_total_bytes", [](M m) { return m.total_bytes(); }},
             {"memory_capacity_bytes", [](M m) { return m.capacity_bytes(); }}}) {
      c->push_back({name, [get](S, P p) { return absl::StrCat(get(p.memory())); }});
    }
    c->push_back(
        {"fits", [](S, P p) { return std::string(p.memory().fits() ? "true" : "false"); }});
    c->push_back(Number("watts_per_gpu", [](P p) { return p.power().watts_per_gpu(); }));
    c->push_back(Number("cluster_kw", [](P p) { return p.power().cluster_kw(); }));
    c->push_back(Number("joules_per_token", [](P p) { return p.power().joules_per_token(); }));
    c->push_back({"warnings", [](S, P p) { return absl::StrJoin(p.warnings(), "; "); }});
    c->push_back(LayoutInt("ep", &pb::Parallelism::ep));
    c->push_back(LayoutInt("etp", &pb::Parallelism::etp));
    ForEachCommKind([c](field_rules::CommKind k, const char* name) {
      if (!InTheMiddle(k)) AddCommColumns(name, c);
    });
    return c;
  }();
  return *columns;
}

}  // namespace

std::vector<std::string> PredictionCsvHeader() { return CsvHeader(PredictionColumns()); }

std::vector<std::string> PredictionCsvRow(const pb::Scenario& s, const pb::Prediction& p) {
  return CsvCells(PredictionColumns(), s, p);
}

std::string FormatPredictCsv(const pb::Scenario& scenario, const pb::PredictResponse& response) {
  return CsvLine(PredictionCsvHeader()) +
         CsvLine(PredictionCsvRow(response.has_scenario() ? response.scenario() : scenario,
                                  response.prediction()));
}

namespace {

// The scenarios a CompareResponse answers: the server's resolved echo when it sent one.
std::vector<pb::Scenario> ComparedScenarios(const std::vector<pb::Scenario>& requested,
                                            const pb::CompareResponse& response) {
  if (response.scenarios_size() == response.predictions_size() && response.scenarios_size() > 0) {
    return {response.scenarios().begin(), response.scenarios().end()};
  }
  std::vector<pb::Scenario> out = requested;
  out.resize(response.predictions_size());
  return out;
}

}  // namespace

std::string FormatCompareTable(const std::vector<pb::Scenario>& requested,
                               const pb::CompareResponse& response, bool wide) {
  const std::vector<pb::Scenario> scenarios = ComparedScenarios(requested, response);
  // The columns that matter most come first: the narrowest table keeps them.
  Table t({{"#"},
           {"scenario", true},
           {"layout", true},
           {"tokens/s"},
           {"tok/s/GPU"},
           {"MFU"},
           {"thru x"},
           {"scaling eff"},
           {"J/token", false, true},
           {"W/GPU", false, true},
           {"step", false, true},
           {"fits", true, true},
           {"80% band", false, true},
           {"per-GPU x", false, true},
           {"W/GPU x", false, true},
           {"J/token x", false, true},
           {"MFU delta", false, true}});
  std::string warnings;
  const int first_gpus = scenarios.empty() ? 0 : scenarios.front().cluster().num_gpus();
  for (int i = 0; i < response.predictions_size(); ++i) {
    const pb::Prediction& p = response.predictions(i);
    const pb::Scenario& s = scenarios[i];
    std::vector<std::string> row{absl::StrCat(i + 1), CompareName(s, scenarios),
                                 LayoutShort(p.layout()), Thousands(p.tokens_per_s()),
                                 Thousands(p.tokens_per_s_per_gpu(), 1)};
    row.push_back(Percent(p.mfu()));
    const pb::Delta d = i < response.deltas_size() ? response.deltas(i) : pb::Delta();
    row.push_back(Fixed(d.throughput_ratio(), 3));
    // Scaling efficiency compares GPU counts: between equal counts it is the throughput ratio
    // again, so it is left blank.
    row.push_back(s.cluster().num_gpus() != first_gpus ? Percent(d.scaling_efficiency()) : "-");
    row.push_back(Significant(p.power().joules_per_token(), 3));
    row.push_back(Thousands(p.power().watts_per_gpu()));
    row.push_back(Seconds(p.step_time_s()));
    row.push_back(p.memory().fits() ? "yes" : "NO");
    row.push_back(BandShort(p).empty() ? "-" : BandShort(p));
    row.push_back(Fixed(d.per_gpu_throughput_ratio(), 3));
    row.push_back(Fixed(d.watts_per_gpu_ratio(), 3));
    row.push_back(Fixed(d.joules_per_token_ratio(), 3));
    row.push_back(
        absl::StrCat(d.mfu_delta() >= 0 ? "+" : "", Fixed(d.mfu_delta() * 100, 1), " pp"));
    t.AddRow(std::move(row));
    for (const std::string& w : p.warnings())
      absl::StrAppend(&warnings, "  #", i + 1, ": ", w, "\n");
  }
  std::vector<std::string> dropped;
  std::string out = absl::StrCat("Compared: ", CompareCommon(scenarios), "\n\n",
                                 t.Render("", wide ? 0 : kTableWidth, &dropped));
  absl::StrAppend(&out,
                  "\nAgainst #1: thru x = throughput ratio; scaling eff = throughput ratio / "
                  "GPU-count ratio,\nshown only where the GPU count differs from #1's.\n");
  if (!dropped.empty()) {
    absl::StrAppend(&out, "--wide adds: ", absl::StrJoin(dropped, ", "), ".\n");
  }
  if (!warnings.empty()) absl::StrAppend(&out, "\nWarnings\n", warnings);
  return out;
}

namespace {

// Compare's columns after a prediction's: its delta against the first scenario, and whether its
// GPU count differs from the first's (scaling efficiency means nothing where it does not).
struct DeltaRow {
  pb::Delta delta;
  bool other_gpu_count = false;
};
using DeltaColumn = CsvOutColumn<DeltaRow>;
DeltaColumn Ratio(std::string name, double (pb::Delta::*get)() const) {
  return {std::move(name), [get](const DeltaRow& r) { return CsvNumber((r.delta.*get)()); }};
}
const std::vector<DeltaColumn>& DeltaColumns() {
  static const auto* columns = new std::vector<DeltaColumn>{
      Ratio("throughput_ratio", &pb::Delta::throughput_ratio),
      Ratio("per_gpu_throughput_ratio", &pb::Delta::per_gpu_throughput_ratio),
      {"scaling_efficiency",
       [](const DeltaRow& r) {
         return r.other_gpu_count ? CsvNumber(r.delta.scaling_efficiency()) : std::string();
       }},
      Ratio("watts_per_gpu_ratio", &pb::Delta::watts_per_gpu_ratio),
      Ratio("joules_per_token_ratio", &pb::Delta::joules_per_token_ratio),
      Ratio("mfu_delta", &pb::Delta::mfu_delta),
  };
  return *columns;
}

}  // namespace

std::string FormatCompareCsv(const std::vector<pb::Scenario>& requested,
                             const pb::CompareResponse& response) {
  const std::vector<pb::Scenario> scenarios = ComparedScenarios(requested, response);
  std::vector<std::string> header = PredictionCsvHeader();
  for (std::string& c : CsvHeader(DeltaColumns())) header.push_back(std::move(c));
  std::string out = CsvLine(header);
  const int first_gpus = scenarios.empty() ? 0 : scenarios.front().cluster().num_gpus();
  for (int i = 0; i < response.predictions_size(); ++i) {
    const pb::Scenario& s = scenarios[i];
    std::vector<std::string> row = PredictionCsvRow(s, response.predictions(i));
    const DeltaRow d{i < response.deltas_size() ? response.deltas(i) : pb::Delta(),
                     s.cluster().num_gpus() != first_gpus};
    for (std::string& c : CsvCells(DeltaColumns(), d)) row.push_back(std::move(c));
    out += CsvLine(row);
  }
  return out;
}

namespace {

// The counts with a best layout that runs (tokens/s > 0), as indices into `results`.
std::vector<int> FeasibleCounts(const std::vector<pb::SweepResult>& results) {
  std::vector<int> feasible;
  for (int i = 0; i < static_cast<int>(results.size()); ++i) {
    if (results[i].has_best() && results[i].best().tokens_per_s() > 0 &&
        results[i].gpu_count() > 0) {
      feasible.push_back(i);
    }
  }
  return feasible;
}

// The two criteria of diminishing returns at the k-th feasible count (k >= 1): tokens/s each GPU
// added since the previous count adds, against the first step's; scaling efficiency against the
// smallest count.
struct ReturnsAt {
  double first_marginal, marginal, efficiency;
};

ReturnsAt ReturnsOf(const std::vector<pb::SweepResult>& results, const std::vector<int>& feasible,
                    size_t k) {
  auto gpus = [&](size_t j) { return static_cast<double>(results[feasible[j]].gpu_count()); };
  auto tps = [&](size_t j) { return results[feasible[j]].best().tokens_per_s(); };
  return {(tps(1) - tps(0)) / (gpus(1) - gpus(0)), (tps(k) - tps(k - 1)) / (gpus(k) - gpus(k - 1)),
          (tps(k) / tps(0)) / (gpus(k) / gpus(0))};
}

}  // namespace

int DiminishingReturnsIndex(const std::vector<pb::SweepResult>& results) {
  const std::vector<int> feasible = FeasibleCounts(results);
  if (feasible.size() < 2) return -1;
  for (size_t k = 1; k < feasible.size(); ++k) {
    const ReturnsAt r = ReturnsOf(results, feasible, k);
    if (r.marginal < 0.5 * r.first_marginal || r.efficiency < 0.7) return feasible[k];
  }
  return -1;
}

namespace {

// The sweep's scenario: model, accelerator, workload, framework, nodes and stack.
std::string SweepHead(const pb::Scenario& base) {
  std::string out = absl::StrCat(
      "Best layout per GPU count: ", ModelField(base), " on ", base.cluster().accelerator(),
      "\n  seq ", base.workload().seq_len(), ", global batch ", base.workload().global_batch(),
      ", ", PrecisionWord(base.workload().precision(), "default precision"), ", framework ",
      FrameworkWords(base), ", ", NodeWords(base.cluster()), "\n");
  if (const std::string stack = StackWords(base.stack()); !stack.empty()) {
    absl::StrAppend(&out, "  stack: ", stack, "\n");
  }
  return out + "\n";
}

// One row per GPU count: its best layout and what it gives, or "no layout works" with the
// reasons by count into `no_layout`.
std::string BestLayoutTable(const std::vector<pb::SweepResult>& results, int diminishing, bool wide,
                            std::string* no_layout) {
  Table t({{"GPUs"},
           {"layout", true},
           {"tokens/s"},
           {"tok/s/GPU"},
           {"MFU"},
           {"W/GPU", false, true},
           {"J/token", false, true},
           {"cached", true, true},
           {"evaluated", false, true},
           {"infeasible", false, true},
           {diminishing >= 0 ? "note" : "", true}});
  for (int i = 0; i < static_cast<int>(results.size()); ++i) {
    const pb::SweepResult& r = results[i];
    const std::string mark = i == diminishing ? "<- diminishing returns" : "";
    const std::string cached = r.cached() ? "yes" : "no";
    const std::string evaluated = Thousands(static_cast<double>(r.evaluated_count()));
    const std::string infeasible = Thousands(static_cast<double>(r.infeasible_count()));
    if (!r.has_best()) {
      t.AddRow({absl::StrCat(r.gpu_count()), "no layout works", "-", "-", "-", "-", "-", cached,
                evaluated, infeasible, mark});
      absl::StrAppend(no_layout, "  ", r.gpu_count(), " GPUs:\n");
      for (const pb::InfeasibleReason& why : r.infeasible_reasons()) {
        absl::StrAppend(no_layout, "    ", Thousands(static_cast<double>(why.count())), " x ",
                        why.reason(), "\n");
      }
      continue;
    }
    const pb::Prediction& p = r.best();
    t.AddRow({absl::StrCat(r.gpu_count()), LayoutShort(p.layout()), Thousands(p.tokens_per_s()),
              Thousands(p.tokens_per_s_per_gpu(), 1), Percent(p.mfu()),
              Thousands(p.power().watts_per_gpu()), Significant(p.power().joules_per_token(), 3),
              cached, evaluated, infeasible, mark});
  }
  std::vector<std::string> dropped;
  std::string out = t.Render("", wide ? 0 : kTableWidth, &dropped);
  if (!dropped.empty()) absl::StrAppend(&out, "--wide adds: ", absl::StrJoin(dropped, ", "), ".\n");
  return out;
}

// Which criterion tripped at the marked count, or that none did.
std::string DiminishingNote(const std::vector<pb::SweepResult>& results, int diminishing) {
  if (diminishing < 0) {
    return "\nNo diminishing returns within these GPU counts (rule: tokens/s per added "
           "GPU below half\nthe first step's, or scaling efficiency vs the smallest count "
           "below 70%).\n";
  }
  const std::vector<int> feasible = FeasibleCounts(results);
  size_t k = 0;
  while (k < feasible.size() && feasible[k] != diminishing) ++k;
  const ReturnsAt r = ReturnsOf(results, feasible, k);
  return absl::StrCat("\nDiminishing returns from ", results[diminishing].gpu_count(),
                      " GPUs: each GPU added since ", results[feasible[k - 1]].gpu_count(),
                      " adds ", Thousands(r.marginal),
                      " tokens/s\n(first step: ", Thousands(r.first_marginal),
                      "; rule: below half), and scaling efficiency "
                      "against ",
                      results[feasible[0]].gpu_count(), " GPUs is ", Percent(r.efficiency),
                      " (rule: below 70%).\n");
}

// What every count's best layout warns is about the request itself (a shared accelerator name
// taken as its usual part, a version resolved to the nearest release): said once.
std::string SharedWarnings(const std::vector<pb::SweepResult>& results) {
  std::vector<std::string> shared;
  bool first = true;
  for (const pb::SweepResult& r : results) {
    if (!r.has_best()) continue;
    const auto& w = r.best().warnings();
    if (first) {
      shared.assign(w.begin(), w.end());
      first = false;
      continue;
    }
    shared.erase(std::remove_if(shared.begin(), shared.end(),
                                [&w](const std::string& x) {
                                  return std::find(w.begin(), w.end(), x) == w.end();
                                }),
                 shared.end());
  }
  if (shared.empty()) return "";
  std::string out = "\nWarnings (every GPU count)\n";
  for (const std::string& w : shared) absl::StrAppend(&out, "  - ", w, "\n");
  return out;
}

// --top-k: each count's best layouts.
std::string TopLayoutTables(const std::vector<pb::SweepResult>& results) {
  std::string out;
  for (const pb::SweepResult& r : results) {
    if (r.top().empty()) continue;
    Table top({{"#"},
               {"layout", true},
               {"step"},
               {"tokens/s"},
               {"tok/s/GPU"},
               {"MFU"},
               {"J/token"},
               {"memory"}});
    for (int k = 0; k < r.top_size(); ++k) {
      const pb::Prediction& p = r.top(k);
      top.AddRow({absl::StrCat(k + 1), LayoutShort(p.layout()), Seconds(p.step_time_s()),
                  Thousands(p.tokens_per_s()), Thousands(p.tokens_per_s_per_gpu(), 1),
                  Percent(p.mfu()), Significant(p.power().joules_per_token(), 3),
                  GiB(p.memory().total_bytes(), 1)});
    }
    absl::StrAppend(&out, "\nTop ", r.top_size(), " layouts at ", r.gpu_count(), " GPUs\n",
                    top.Render("  "));
  }
  return out;
}

}  // namespace

std::string FormatSweepTable(const pb::Scenario& request,
                             const std::vector<pb::SweepResult>& results, int diminishing,
                             bool show_top, bool wide) {
  const pb::Scenario& base =
      !results.empty() && results.front().has_scenario() ? results.front().scenario() : request;
  std::string no_layout;
  std::string out = SweepHead(base) + BestLayoutTable(results, diminishing, wide, &no_layout) +
                    DiminishingNote(results, diminishing);
  if (!no_layout.empty()) {
    absl::StrAppend(&out, "\nWhy no layout works (layouts by reason)\n", no_layout);
  }
  absl::StrAppend(&out, SharedWarnings(results), show_top ? TopLayoutTables(results) : "");
  return out;
}

std::string FormatSweepCsv(const pb::Scenario& base, const std::vector<pb::SweepResult>& results,
                           int diminishing) {
  std::vector<std::string> header{"gpus", "cached", "evaluated_count", "infeasible_count",
                                  "diminishing_returns"};
  for (const std::string& h : PredictionCsvHeader()) header.push_back(h);
  std::string out = CsvLine(header);
  for (int i = 0; i < static_cast<int>(results.size()); ++i) {
    const pb::SweepResult& r = results[i];
    std::vector<std::string> row{absl::StrCat(r.gpu_count()), r.cached() ? "true" : "false",
                                 absl::StrCat(r.evaluated_count()),
                                 absl::StrCat(r.infeasible_count()),
                                 i == diminishing ? "true" : "false"};
    pb::Scenario s = r.has_scenario() ? r.scenario() : base;
    s.mutable_cluster()->set_num_gpus(r.gpu_count());
    if (r.has_best()) {
      for (std::string& c : PredictionCsvRow(s, r.best())) row.push_back(std::move(c));
    }
    out += CsvLine(row);
  }
  return out;
}

std::string FormatSweepJson(const std::vector<pb::SweepResult>& results, int diminishing) {
  std::string out = "{\n  \"results\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    std::string one = ToJson(results[i], false);
    while (!one.empty() && one.back() == '\n') one.pop_back();
    absl::StrAppend(&out, i == 0 ? "\n    " : ",\n    ", one);
  }
  absl::StrAppend(&out, results.empty() ? "],\n" : "\n  ],\n", "  \"diminishingReturnsGpuCount\": ",
                  diminishing >= 0 ? results[diminishing].gpu_count() : 0, "\n}\n");
  return out;
}

std::string ProgressBar(const pb::SweepProgress& p, int width) {
  const double frac =
      p.total_count() > 0
          ? std::clamp(static_cast<double>(p.evaluated_count()) / p.total_count(), 0.0, 1.0)
          : 0.0;
  const std::string tail = absl::StrCat(
      " ", Fixed(frac * 100, 0), "% ", Thousands(static_cast<double>(p.evaluated_count())), "/",
      Thousands(static_cast<double>(p.total_count())), " layouts",
      p.gpu_count() > 0 ? absl::StrCat(" (", p.gpu_count(), " GPUs)") : "");
  const int bar = std::max(10, width - static_cast<int>(tail.size()) - 3);
  const int filled = static_cast<int>(frac * bar);
  std::string out = "[";
  out += std::string(filled, '=');
  if (filled < bar) out += '>';
  out += std::string(std::max(0, bar - filled - 1), ' ');
  return out + "]" + tail;
}

}  // namespace scalecast::cli
