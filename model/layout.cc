#include "model/layout.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "model/hardware.h"
#include "model/workload.h"

namespace scalecast {
namespace {

std::vector<int> Divisors(int n, int max) {
  std::vector<int> d;
  for (int i = 1; i <= n && i <= max; ++i) {
    if (n % i == 0) d.push_back(i);
  }
  return d;
}

// The context's framework; the generic one where it names none.
const Framework& FrameworkOf(const LayoutContext& c) {
  return c.framework != nullptr ? *c.framework : GenericFramework();
}

const FrameworkCapabilities& Caps(const LayoutContext& c) {
  return c.capabilities != nullptr ? *c.capabilities : FrameworkOf(c).capabilities;
}

// The framework as its refusals name it, with its release's month where that release offers
// less than today's (CapabilitiesAt).
std::string FrameworkName(const LayoutContext& c) {
  const Framework& f = FrameworkOf(c);
  std::string name = f.name.empty() ? "the generic framework" : f.name;
  if (c.capabilities != nullptr && c.capabilities != &f.capabilities) {
    absl::StrAppend(&name, " as of ", YearMonthOf(c.software_date));
  }
  return name;
}

bool Offers(const std::vector<Sharding>& list, Sharding s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

// Units the last stage's tail takes where the loss counts in the split: the loss, and each
// multi-token prediction module as two (its transformer layer, and its pass through the output
// head and loss), as Megatron-Bridge's DeepSeek-V3 layouts count them: with 4-layer chunks the
// last holds one layer, the MTP module and the loss.
int TailUnits(const ModelSpec& m, const Parallelism& p) {
  return p.loss_in_split ? 1 + 2 * m.mtp_layers : 0;
}

// Split units: transformer layers plus the embedding and the tail where they count as layers.
int SplitUnits(const ModelSpec& m, const Parallelism& p) {
  return m.layers + (p.embedding_in_split ? 1 : 0) + TailUnits(m, p);
}

}  // namespace

LayoutContext MakeLayoutContext(const Scenario& s, int domain, const Stack* stack) {
  return MakeLayoutContext(s, domain, FindFramework(s.framework), stack);
}

LayoutContext MakeLayoutContext(const Scenario& s, int domain, const Framework* framework,
                                const Stack* stack) {
  const Framework& f = framework != nullptr ? *framework : GenericFramework();
  const double software_date = stack != nullptr ? stack->software_date : 0;
  LayoutContext c;
  c.model = &s.workload.model;
  c.seq_len = s.workload.seq_len;
  c.global_batch = s.workload.global_batch;
  c.num_gpus = s.cluster.num_gpus;
  c.domain = domain;
  c.framework = framework;
  c.capabilities = &CapabilitiesAt(f, software_date);
  c.software_date = software_date;
  c.cp_comm = stack != nullptr ? stack->cp_comm : f.behaviour.cp_comm;
  return c;
}

LayoutContext MakeLayoutContext(const Scenario& s, const Accelerator* acc,
                                const Framework* framework, const Stack* stack) {
  LayoutContext c = MakeLayoutContext(
      s, acc == nullptr ? 8 : DomainSize(*acc, s.cluster.gpus_per_node), framework, stack);
  c.host_offload = acc != nullptr && CanOffload(*acc);
  c.tpu = acc != nullptr && IsTpu(*acc);
  return c;
}

int PipelineSplit::Max() const { return std::max({first, middle, last + mtp}); }

std::string CheckTp(const LayoutContext& c, int tp) {
  const ModelSpec& m = *c.model;
  if (tp < 1) return "must be at least 1";
  if (tp > 1 && !Caps(c).tensor_parallel) {
    return absl::StrCat(FrameworkName(c), " does not offer tensor parallelism");
  }
  if (m.heads % tp != 0) return absl::StrCat(tp, " does not divide heads=", m.heads);
  if (m.ffn_hidden % tp != 0) {
    return absl::StrCat(tp, " does not divide ffn_hidden=", m.ffn_hidden);
  }
  if (c.num_gpus % tp != 0) return absl::StrCat(tp, " does not divide num_gpus=", c.num_gpus);
  return "";
}

std::vector<int> TpCandidates(const LayoutContext& c) {
  if (!Caps(c).tensor_parallel) return {1};
  std::vector<int> out;
  // Beyond two NVLink domains tensor parallelism only loses; keep one step past the domain so
  // the planner can show that.
  for (int t : Divisors(std::gcd(c.model->heads, c.num_gpus), std::max(2 * c.domain, 8))) {
    if (CheckTp(c, t).empty()) out.push_back(t);
  }
  return out;
}

PipelineSplit SplitLayers(const ModelSpec& m, const Parallelism& p) {
  PipelineSplit s;
  const int pp = std::max(1, p.pp);
  s.mtp = m.mtp_layers;
  if (pp == 1) {
    s.first = s.middle = s.last = m.layers;
    return s;
  }
  if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
    const int fixed = (p.first_stage_layers > 0) + (p.last_stage_layers > 0);
    const int rest = m.layers - p.first_stage_layers - p.last_stage_layers;
    const int per = pp - fixed > 0 ? rest / (pp - fixed) : 0;
    s.middle = per;
    s.first = p.first_stage_layers > 0 ? p.first_stage_layers : per;
    s.last = p.last_stage_layers > 0 ? p.last_stage_layers : per;
    if (pp == 2 && fixed == 2) s.middle = 0;
    return s;
  }
  // Counting the embedding and the loss as layers, Megatron-Core's custom pipeline layout
  // (--pipeline-model-parallel-layout) spreads units that do not divide evenly so that no
  // chunk holds more than one unit above the others; the extra units go to the first chunks,
  // away from the last stage and its output layer (NeMo's DeepSeek-V3 split of 61 layers on 4
  // stages is 15 + embedding, 16, 16, 14 + loss). Chunk c runs on stage c % pp.
  const int vpp = std::max(1, p.vpp);
  const int units = SplitUnits(m, p);
  const int chunks = pp * vpp;
  auto stage_units = [&](int stage) {
    int n = 0;
    for (int k = 0; k < vpp; ++k) n += units / chunks + (stage + k * pp < units % chunks ? 1 : 0);
    return n;
  };
  s.first = stage_units(0) - (p.embedding_in_split ? 1 : 0);
  s.last = stage_units(pp - 1) - TailUnits(m, p);
  s.middle = pp > 2 ? stage_units(1) : 0;
  return s;
}

std::string CheckPp(const LayoutContext& c, int pp) {
  if (pp < 1) return "must be at least 1";
  if (pp > 1 && !Caps(c).pipeline_parallel) {
    return absl::StrCat(FrameworkName(c), " does not offer pipeline parallelism");
  }
  if (pp > c.model->layers) return absl::StrCat("pp=", pp, " exceeds layers=", c.model->layers);
  return "";
}

std::string CheckPipeline(const LayoutContext& c, const Parallelism& p) {
  const ModelSpec& m = *c.model;
  const FrameworkCapabilities& caps = Caps(c);
  const int pp = p.pp, vpp = p.vpp;
  if (pp < 1 || vpp < 1) return "pp and vpp must be at least 1";
  if (const std::string why = CheckPp(c, pp); !why.empty()) return why;
  if (vpp > 1 && pp == 1) return "interleaving (vpp > 1) needs pp > 1";
  if (vpp > 1 && !caps.interleaved_pipeline) {
    return absl::StrCat(FrameworkName(c), " does not offer an interleaved pipeline schedule");
  }
  if (pp % 2 != 0 && c.framework != nullptr && StagesPerGpu(c.framework->behaviour, pp) == 2) {
    return absl::StrCat(FrameworkName(c), "'s DualPipe schedule needs an even pp, not ", pp);
  }
  const bool uneven = p.first_stage_layers > 0 || p.last_stage_layers > 0 || p.embedding_in_split ||
                      p.loss_in_split;
  if (uneven && pp == 1) return "an uneven pipeline split needs pp > 1";
  if (uneven && !caps.uneven_pipeline_split) {
    return absl::StrCat(FrameworkName(c), " does not offer an uneven pipeline split");
  }
  if ((p.first_stage_layers > 0 || p.last_stage_layers > 0) &&
      (p.embedding_in_split || p.loss_in_split)) {
    return "give first/last stage layers or count the embedding and loss in the split, not both";
  }
  if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
    const int fixed = (p.first_stage_layers > 0) + (p.last_stage_layers > 0);
    const int rest = m.layers - p.first_stage_layers - p.last_stage_layers;
    if (rest < 0 || (pp - fixed == 0 && rest != 0) || (pp - fixed > 0 && rest < pp - fixed)) {
      return absl::StrCat("first/last stage layers leave ", rest, " layers for ", pp - fixed,
                          " other stages");
    }
    if (pp - fixed > 0 && rest % (pp - fixed) != 0) {
      return absl::StrCat("the ", rest, " layers left do not split evenly over the ", pp - fixed,
                          " other stages");
    }
    const PipelineSplit s = SplitLayers(m, p);
    for (int n : {s.first, s.last, pp > 2 ? s.middle : vpp}) {
      if (n < vpp || n % vpp != 0) {
        return absl::StrCat("a stage of ", n, " layers does not split into vpp=", vpp, " chunks");
      }
    }
    return "";
  }
  const int units = SplitUnits(m, p);
  if ((p.embedding_in_split || p.loss_in_split) && caps.flexible_pipeline_layout &&
      units >= pp * vpp) {
    // The custom layout takes any count of at least one unit per chunk (SplitLayers).
  } else if (units % (pp * vpp) != 0) {
    std::string what = absl::StrCat("layers=", m.layers);
    if (p.embedding_in_split || p.loss_in_split) absl::StrAppend(&what, " (", units, " units)");
    return absl::StrCat(what, " do not split evenly into pp*vpp=", pp * vpp,
                        " chunks (give first/last stage layers, or count the embedding and "
                        "loss in the split, for an uneven split)");
  }
  const PipelineSplit s = SplitLayers(m, p);
  if (s.first < 1 || s.last < 0 || s.last + s.mtp < 1)
    return "a stage would hold no transformer layer";
  return "";
}

namespace {

// The split variants for `pp` stages: as requested; else even, or where the framework offers it
// and the even split does not divide, the one that counts the embedding and the loss as layers.
// Writes one or two into `out`; returns the count.
int SplitVariants(const LayoutContext& c, const Parallelism& req, int pp, Parallelism out[2]) {
  const ModelSpec& m = *c.model;
  const bool fixed_split = req.first_stage_layers > 0 || req.last_stage_layers > 0 ||
                           req.embedding_in_split || req.loss_in_split;
  out[0] = req;
  out[0].pp = pp;
  if (fixed_split || pp == 1) return 1;
  const bool even = m.layers % pp == 0 && (req.vpp <= 0 || m.layers % (pp * req.vpp) == 0);
  if (!Caps(c).uneven_pipeline_split || even) return 1;
  out[1] = out[0];
  out[1].embedding_in_split = out[1].loss_in_split = true;
  return 2;
}

}  // namespace

std::optional<Parallelism> FirstPipelineSplit(const LayoutContext& c, const Parallelism& req) {
  Parallelism splits[2];
  const int n = SplitVariants(c, req, req.pp, splits);
  for (int i = 0; i < n; ++i) {
    if (CheckPipeline(c, splits[i]).empty()) return splits[i];
  }
  return std::nullopt;
}

std::vector<Parallelism> PipelineCandidates(const LayoutContext& c, const Parallelism& req) {
  const ModelSpec& m = *c.model;
  const FrameworkCapabilities& caps = Caps(c);
  std::vector<Parallelism> out;
  std::vector<int> pps;
  if (req.pp > 0) {
    pps = {req.pp};
  } else if (req.cpu_offload_layers > 0) {
    pps = {1};  // offloading excludes pipelining
  } else if (caps.pipeline_parallel) {
    pps = Divisors(m.layers + 2, 64);
    for (int d : Divisors(m.layers, 64)) pps.push_back(d);
    // A flexible layout takes any stage count; the powers of two recipes use (at least two
    // layers a stage).
    if (caps.flexible_pipeline_layout) {
      for (int d = 2; d <= 32 && 2 * d <= m.layers; d *= 2) pps.push_back(d);
    }
    std::sort(pps.begin(), pps.end());
    pps.erase(std::unique(pps.begin(), pps.end()), pps.end());
  } else {
    pps = {1};
  }
  for (int pp : pps) {
    Parallelism splits[2];
    const int variants = SplitVariants(c, req, pp, splits);
    for (int i = 0; i < variants; ++i) {
      Parallelism p = splits[i];
      std::vector<int> vpps;
      if (req.vpp > 0) {
        vpps = {req.vpp};
      } else if (pp == 1 || !caps.interleaved_pipeline) {
        vpps = {1};
      } else {
        // Interleaving of 2, or chunks of 1, 2 or 4 layers: the choices production recipes make
        // (NeMo runs 70B at 4 layers a chunk, 405B at 2, 175B and 340B at 1).
        const int per_stage = std::max(1, SplitUnits(m, p) / pp);
        vpps = {1, 2};
        for (int chunk : {4, 2, 1}) {
          if (per_stage % chunk == 0 && per_stage / chunk > 2) vpps.push_back(per_stage / chunk);
        }
      }
      for (int v : vpps) {
        p.vpp = v;
        if (CheckPipeline(c, p).empty()) out.push_back(p);
      }
    }
  }
  return out;
}

namespace {

// Where the exchange came to this kind of accelerator after the framework's release, or never
// (FrameworkCapabilities::cp_comm_platforms): the reason, else "".
std::string CheckCpPlatform(const LayoutContext& c) {
  const Framework& f = FrameworkOf(c);
  for (const CpCommPlatforms& e : f.capabilities.cp_comm_platforms) {
    if (e.comm != c.cp_comm) continue;
    const double here = c.tpu ? e.tpu_since : e.gpu_since;
    const char* other = c.tpu ? "GPUs" : "TPUs";
    if (here >= kNeverOn) {
      return absl::StrCat(f.name, " runs ", ToString(e.comm), " context parallelism on ", other,
                          " only");
    }
    if (c.software_date > 0 && c.software_date < here) {
      return absl::StrCat(f.name, " as of ", YearMonthOf(c.software_date), " runs ",
                          ToString(e.comm), " context parallelism on ", other, " only (on ",
                          c.tpu ? "TPUs" : "GPUs", " from ", YearMonthOf(here), ")");
    }
  }
  return "";
}

}  // namespace

std::string CheckCp(const LayoutContext& c, int cp) {
  if (cp < 1) return "must be at least 1";
  if (cp > 1 && !Caps(c).context_parallel) {
    return absl::StrCat(FrameworkName(c), " does not offer context parallelism");
  }
  if (cp > 1) {
    if (std::string why = CheckCpPlatform(c); !why.empty()) return why;
  }
  if (cp > 1 && c.seq_len % (2 * cp) != 0) {
    return absl::StrCat("2*cp=", 2 * cp, " does not divide seq_len=", c.seq_len);
  }
  return CheckCpHeads(c, 1, cp);
}

namespace {

// Whether `ranks` all-to-all ranks split `heads` heads evenly on each of `tp` TP ranks: the rule
// of every exchange that passes heads (CheckCpHeads, CheckCpA2a, CpAllToAllRanks).
bool SplitsHeads(int ranks, int tp, int heads) {
  return heads % tp == 0 && (heads / tp) % ranks == 0;
}

// "" when `ranks` split the query and the key/value heads of each of `tp` TP ranks, else which
// they do not ("does not divide the 4 key/value heads per TP rank"). Latent attention expands
// its keys and values per query head.
std::string UnsplitHeads(const ModelSpec& m, int ranks, int tp) {
  const int kv = m.mla.enabled() || m.kv_heads <= 0 ? m.heads : m.kv_heads;
  const int t = std::max(1, tp);
  for (const auto& [heads, what] : {std::pair{m.heads, "query"}, std::pair{kv, "key/value"}}) {
    if (!SplitsHeads(ranks, t, heads)) {
      return absl::StrCat("does not divide the ", heads / t, " ", what, " heads",
                          t > 1 ? " per TP rank" : "");
    }
  }
  return "";
}

}  // namespace

std::string CheckCpHeads(const LayoutContext& c, int tp, int cp) {
  // The two-level exchange picks an all-to-all group that divides the heads (CpAllToAllRanks).
  if (cp <= 1 || c.cp_comm != CpComm::kAllToAll) return "";
  const std::string why = UnsplitHeads(*c.model, cp, tp);
  if (why.empty()) return "";
  return absl::StrCat(FrameworkName(c), "'s context parallelism by all-to-all (a2a, Ulysses) ",
                      "splits the heads: cp=", cp, " ", why);
}

std::string CheckCpA2a(const LayoutContext& c, int a2a, int tp, int cp) {
  if (a2a <= 0) return "";
  if (c.cp_comm != CpComm::kHierarchical) {
    return absl::StrCat(
        "sets the all-to-all group of a2a+p2p context parallelism "
        "(stack.cp_comm_type), not of ",
        ToString(c.cp_comm));
  }
  if (cp > 0 && cp % a2a != 0) return absl::StrCat(a2a, " does not divide cp=", cp);
  const std::string why = UnsplitHeads(*c.model, a2a, tp);
  return why.empty() ? "" : absl::StrCat(a2a, " ", why);
}

int CpAllToAllRanks(CpComm comm, int cp, int tp, int domain, int heads, int kv_heads) {
  if (comm == CpComm::kAllToAll) return cp;
  if (comm != CpComm::kHierarchical) return 1;
  const int t = std::max(1, tp);
  int best = 1;
  for (int a = 2; a <= std::min(cp, std::max(1, domain / t)); ++a) {
    if (cp % a == 0 && SplitsHeads(a, t, heads) && SplitsHeads(a, t, kv_heads)) best = a;
  }
  return best;
}

std::vector<int> CpCandidates(const LayoutContext& c) {
  if (!Caps(c).context_parallel) return {1};
  std::vector<int> out;
  for (int cp = 1; cp <= 32; cp *= 2) {
    if (cp > 1 && c.seq_len / cp < 1024) break;
    if (CheckCp(c, cp).empty()) out.push_back(cp);
  }
  return out;
}

std::string CheckEtp(const LayoutContext& c, int etp, int tp) {
  if (etp < 1) return "must be at least 1";
  if (etp == 1) return "";
  if (!c.model->moe.enabled()) return "expert tensor parallelism needs a mixture-of-experts model";
  if (!Caps(c).expert_tensor_parallel) {
    return absl::StrCat(FrameworkName(c), " does not offer expert tensor parallelism");
  }
  if (tp % etp != 0) return absl::StrCat("etp=", etp, " does not divide tp=", tp);
  if (c.model->moe.expert_ffn_hidden % etp != 0) {
    return absl::StrCat("etp=", etp, " does not divide the expert FFN width ",
                        c.model->moe.expert_ffn_hidden);
  }
  return "";
}

uint32_t FrameworkSelectiveModules(const LayoutContext& c) {
  if (c.framework == nullptr) return 0;
  uint32_t out = 0;
  for (int i = 0; i < kRecomputeModules; ++i) {
    const uint32_t bit = 1u << i;
    if ((c.framework->behaviour.selective_modules & bit) != 0 &&
        CheckRecomputeModules(c, bit, Recompute::kSelective).empty()) {
      out |= bit;
    }
  }
  return out;
}

std::vector<uint32_t> RecomputeModuleLadder(const LayoutContext& c) {
  if (!Caps(c).recompute_modules || FrameworkOf(c).behaviour.selective_modules != 0) {
    return {};
  }
  using M = RecomputeModule;
  const Shape shape(*c.model);
  auto bit_if = [](bool present, M m) { return present ? Bit(m) : 0u; };
  const uint32_t light = Bit(M::kLayernorm) | bit_if(shape.n_moe > 0, M::kMoeAct);
  const uint32_t up_proj = bit_if(shape.mla, M::kMlaUpProj);
  const uint32_t core = bit_if(shape.n_attention > 0, M::kCoreAttn);
  const uint32_t blocks = Bit(M::kLayernorm) | bit_if(shape.n_dense_ffn > 0, M::kMlp) |
                          bit_if(shape.n_moe > 0, M::kMoe);
  std::vector<uint32_t> out;
  for (uint32_t set :
       {light, light | up_proj, light | up_proj | core, blocks, blocks | up_proj | core}) {
    if (std::find(out.begin(), out.end(), set) == out.end() &&
        CheckRecomputeModules(c, set, Recompute::kSelective).empty()) {
      out.push_back(set);
    }
  }
  return out;
}

bool ModulesCover(uint32_t heavier, uint32_t lighter) {
  // A whole MoE block's recompute rebuilds the experts' activation inside it.
  if ((heavier & Bit(RecomputeModule::kMoe)) != 0) heavier |= Bit(RecomputeModule::kMoeAct);
  return (heavier & lighter) == lighter;
}

std::string CheckRecomputeModules(const LayoutContext& c, uint32_t modules, Recompute recompute) {
  if (modules == 0) return "";
  if (!Caps(c).recompute_modules) {
    return absl::StrCat(FrameworkName(c), " does not offer recompute by module");
  }
  if (recompute != Recompute::kSelective && recompute != Recompute::kUnspecified) {
    return absl::StrCat("need recompute selective, not ", ToString(recompute));
  }
  // The block counts as the step model sees them (dense, MoE and hybrid layer patterns alike).
  const Shape shape(*c.model);
  for (int i = 0; i < kRecomputeModules; ++i) {
    if ((modules & (1u << i)) == 0) continue;
    const auto module = static_cast<RecomputeModule>(i);
    std::string missing;
    if (module == RecomputeModule::kMlaUpProj && !shape.mla) missing = "MLA";
    if ((module == RecomputeModule::kMoe || module == RecomputeModule::kMoeAct) &&
        shape.n_moe <= 0) {
      missing = "a mixture-of-experts layer";
    }
    if (module == RecomputeModule::kSharedExperts && shape.shared_ffn <= 0) {
      missing = "shared experts";
    }
    if (module == RecomputeModule::kMlp && shape.n_dense_ffn <= 0) missing = "a dense MLP layer";
    if (!missing.empty()) {
      return absl::StrCat(RecomputeModulesToString(1u << i), " needs ", missing,
                          " and the model has none");
    }
  }
  return "";
}

std::string CheckRecomputeLayers(const LayoutContext& c, int layers, Recompute recompute, int pp) {
  if (layers == 0) return "";
  if (!Caps(c).partial_recompute) {
    return absl::StrCat(FrameworkName(c), " recomputes every layer or none");
  }
  if (recompute != Recompute::kFull && recompute != Recompute::kUnspecified) {
    return absl::StrCat("needs recompute full, not ", ToString(recompute));
  }
  if (pp > 0 && layers * pp > c.model->layers) {
    return absl::StrCat(layers, " is more than the ", c.model->layers / pp,
                        " layers of a pipeline stage");
  }
  return "";
}

std::string CheckCpuOffloadLayers(const LayoutContext& c, int layers, Recompute recompute, int pp) {
  if (layers == 0) return "";
  if (!Caps(c).cpu_offload) {
    return absl::StrCat(FrameworkName(c), " does not offload activations to host memory");
  }
  if (layers >= c.model->layers) {
    return absl::StrCat(layers, " is not fewer than the model's ", c.model->layers, " layers");
  }
  if (pp > 1) return absl::StrCat("needs pp=1 (no CPU offloading with pipelining), not pp=", pp);
  if (recompute != Recompute::kNone && recompute != Recompute::kUnspecified) {
    return absl::StrCat("needs recompute none (no CPU offloading with recompute), not ",
                        ToString(recompute));
  }
  if (!c.host_offload) return "the accelerator's entry has no host_link_gbps and host_memory_gib";
  return "";
}

std::vector<int> OffloadLayerCandidates(const LayoutContext& c, int pp) {
  if (pp != 1 || !Caps(c).cpu_offload || !c.host_offload) return {};
  return OffloadLayerSteps(c.model->layers);
}

std::vector<int> OffloadLayerSteps(int layers) { return PartialRecomputeSteps(layers); }

std::vector<int> PartialRecomputeSteps(int per_stage) {
  std::vector<int> out;
  for (int quarter = 1; quarter <= 3; ++quarter) {
    const int n = per_stage * quarter / 4;
    if (n >= 1 && n < per_stage && (out.empty() || out.back() != n)) out.push_back(n);
  }
  return out;
}

std::vector<int> RecomputeLayerCandidates(const LayoutContext& c, int pp) {
  if (!Caps(c).partial_recompute) return {};
  return PartialRecomputeSteps(c.model->layers / std::max(1, pp));
}

bool LeavesRecomputeOpen(const Parallelism& req) {
  return req.recompute == Recompute::kUnspecified && req.recompute_modules == 0 &&
         req.recompute_layers <= 0 && req.cpu_offload_layers <= 0;
}

std::vector<RecomputeChoice> RecomputeCandidates(const LayoutContext& c, const Parallelism& req,
                                                 int pp, PartialSteps steps) {
  if (req.recompute != Recompute::kUnspecified) {
    return {{req.recompute, req.recompute_layers, req.cpu_offload_layers}};
  }
  // Offloading excludes recompute.
  if (req.cpu_offload_layers > 0) return {{Recompute::kNone, 0, req.cpu_offload_layers}};
  if (req.recompute_layers > 0) return {{Recompute::kFull, req.recompute_layers}};
  std::vector<RecomputeChoice> out = {
      {Recompute::kNone, 0}, {Recompute::kSelective, 0}, {Recompute::kFull, 0}};
  const std::vector<int> offload = OffloadLayerCandidates(c, pp);
  if (steps == PartialSteps::kLadder) {
    if (!offload.empty()) out.push_back({Recompute::kNone, 0, offload.back()});
    return out;
  }
  for (int n : RecomputeLayerCandidates(c, pp)) out.push_back({Recompute::kFull, n});
  for (int n : offload) out.push_back({Recompute::kNone, 0, n});
  return out;
}

std::vector<int> EtpCandidates(const LayoutContext& c, int tp) {
  // The planner tries the two settings Megatron-Core's MoE guidance uses: experts not split
  // (etp 1, the default of every Megatron-Bridge MoE recipe) or split as the dense layers
  // (etp = tp). A request may fix any other divisor of tp.
  std::vector<int> out = {1};
  if (tp > 1 && CheckEtp(c, tp, tp).empty()) out.push_back(tp);
  return out;
}

std::string CheckEp(const LayoutContext& c, int ep, int etp, int stage_ranks) {
  if (ep < 1) return "must be at least 1";
  if (ep == 1) return "";
  const MoeSpec& moe = c.model->moe;
  if (!moe.enabled()) return "expert parallelism needs a mixture-of-experts model";
  if (!Caps(c).expert_parallel) {
    return absl::StrCat(FrameworkName(c), " does not offer expert parallelism");
  }
  if (moe.num_experts % ep != 0) {
    return absl::StrCat("ep=", ep, " does not divide the ", moe.num_experts, " routed experts");
  }
  if (stage_ranks % (static_cast<int64_t>(ep) * etp) != 0) {
    return absl::StrCat("ep*etp=", static_cast<int64_t>(ep) * etp,
                        " does not divide the tp*cp*dp=", stage_ranks,
                        " ranks of a pipeline stage");
  }
  return "";
}

std::vector<int> EpCandidates(const LayoutContext& c, int etp, int stage_ranks) {
  if (!c.model->moe.enabled() || !Caps(c).expert_parallel) return {1};
  std::vector<int> out;
  for (int ep = 1; ep <= c.model->moe.num_experts && ep <= stage_ranks; ep *= 2) {
    if (CheckEp(c, ep, etp, stage_ranks).empty()) out.push_back(ep);
  }
  // Expert counts that are not powers of two (Mixtral-like 8 is; 160, 384 are not): their own
  // divisors up to the stage size.
  for (int ep = 3; ep <= c.model->moe.num_experts && ep <= stage_ranks; ++ep) {
    if ((ep & (ep - 1)) != 0 && c.model->moe.num_experts % ep == 0 &&
        CheckEp(c, ep, etp, stage_ranks).empty()) {
      out.push_back(ep);
    }
  }
  return out;
}

std::string CheckDp(const LayoutContext& c, int dp) {
  if (dp < 1) return "must be at least 1";
  if (c.global_batch % dp != 0) {
    return absl::StrCat("global batch ", c.global_batch, " does not split over dp=", dp,
                        " data-parallel replicas");
  }
  return "";
}

std::string CheckMicroBatch(const LayoutContext& c, int dp, int micro_batch) {
  if (micro_batch < 1) return "must be at least 1";
  const int64_t local = c.global_batch / std::max(1, dp);
  if (local % micro_batch != 0) {
    return absl::StrCat(micro_batch, " does not divide the per-replica batch ", local);
  }
  return "";
}

std::vector<int> MicroBatchCandidates(const LayoutContext& c, int dp) {
  const int64_t local = c.global_batch / std::max(1, dp);
  std::vector<int> out;
  for (int64_t b = 1; b <= local && b <= 256; b *= 2) {
    if (local % b == 0) out.push_back(static_cast<int>(b));
  }
  if (local <= 256 && (local & (local - 1)) != 0) out.push_back(static_cast<int>(local));
  return out;
}

namespace {

bool FullySharded(Sharding s) { return s == Sharding::kFsdp || s == Sharding::kHsdp; }

// What keeps the framework from running `sharding` at this tp and pp (CheckSharding words it).
enum class ShardingConflict { kNone, kNotOffered, kWithPipeline, kWithTensorParallel };

ShardingConflict ShardingConflictOf(const FrameworkCapabilities& caps, Sharding sharding, int tp,
                                    int pp) {
  if (!Offers(caps.shardings, sharding)) return ShardingConflict::kNotOffered;
  if (pp > 1 && !Offers(caps.pipeline_shardings, sharding)) return ShardingConflict::kWithPipeline;
  if (tp > 1 && FullySharded(sharding) && !caps.tensor_parallel_with_fsdp) {
    return ShardingConflict::kWithTensorParallel;
  }
  return ShardingConflict::kNone;
}

}  // namespace

std::string CheckSharding(const LayoutContext& c, Sharding sharding, int tp, int pp) {
  switch (ShardingConflictOf(Caps(c), sharding, tp, pp)) {
    case ShardingConflict::kNotOffered:
      return absl::StrCat(FrameworkName(c), " does not offer ", ToString(sharding));
    case ShardingConflict::kWithPipeline:
      return absl::StrCat(FrameworkName(c), " does not combine ", ToString(sharding),
                          " with pipeline parallelism");
    case ShardingConflict::kWithTensorParallel:
      return absl::StrCat(FrameworkName(c), " does not combine ", ToString(sharding),
                          " with tensor parallelism");
    case ShardingConflict::kNone:
      break;
  }
  return "";
}

std::vector<Sharding> ShardingCandidates(const LayoutContext& c, int tp, int pp, Sharding only) {
  const FrameworkCapabilities& caps = Caps(c);
  std::vector<Sharding> out;
  for (Sharding s : caps.shardings) {
    if ((only == Sharding::kUnspecified || s == only) &&
        ShardingConflictOf(caps, s, tp, pp) == ShardingConflict::kNone) {
      out.push_back(s);
    }
  }
  return out;
}

std::string CheckShardGroup(Sharding sharding, int shard_group) {
  if (shard_group > 0 && sharding != Sharding::kHsdp && sharding != Sharding::kUnspecified) {
    return "is only meaningful with HSDP";
  }
  return "";
}

std::vector<int> ShardGroupCandidates(const LayoutContext& c, int tp, int n_dp) {
  const int per_domain = std::max(1, std::min(c.domain / std::max(1, tp), n_dp));
  if (per_domain > 1 && per_domain < n_dp && n_dp % per_domain == 0) return {per_domain};
  return {};
}

std::string CheckSequenceParallel(const LayoutContext& c, const Parallelism& request) {
  if (request.tp > 1 && request.sequence_parallel.value_or(false) && !Caps(c).sequence_parallel) {
    return absl::StrCat(FrameworkName(c), " does not offer sequence parallelism");
  }
  return "";
}

bool SequenceParallel(const LayoutContext& c, const Parallelism& request, int tp) {
  if (tp <= 1 || !Caps(c).sequence_parallel) return false;
  if (request.sequence_parallel.has_value()) return *request.sequence_parallel;
  return FrameworkOf(c).behaviour.sequence_parallel_with_tp;
}

}  // namespace scalecast
