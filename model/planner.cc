#include "model/planner.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "model/hardware.h"

namespace scalecast {
namespace {

std::vector<int> Divisors(int n, int max) {
  std::vector<int> d;
  for (int i = 1; i <= n && i <= max; ++i) {
    if (n % i == 0) d.push_back(i);
  }
  return d;
}

int LayoutRank(const Parallelism& p) {
  // Tie-break toward simpler layouts: fewer model-parallel ranks, less recompute.
  return p.tp * p.pp * p.vpp * p.cp * 4 + static_cast<int>(p.recompute);
}

void KeepTop(const Objective objective, int top_k, std::vector<Prediction>* top) {
  std::sort(top->begin(), top->end(), [objective](const Prediction& a, const Prediction& b) {
    return Better(a, b, objective);
  });
  if (static_cast<int>(top->size()) > top_k) top->resize(top_k);
}

}  // namespace

bool Better(const Prediction& a, const Prediction& b, Objective objective) {
  const double va = objective == Objective::kEnergy ? -a.power.joules_per_token : a.tokens_per_s;
  const double vb = objective == Objective::kEnergy ? -b.power.joules_per_token : b.tokens_per_s;
  if (va != vb) return va > vb;
  return LayoutRank(a.layout) < LayoutRank(b.layout);
}

std::string PlanResult::InfeasibleSummary() const {
  std::string s;
  for (const auto& [reason, count] : infeasible_reasons) {
    absl::StrAppend(&s, s.empty() ? "" : "; ", count, " ", reason);
  }
  return s;
}

std::vector<Parallelism> EnumerateLayouts(const Scenario& s, const Catalog& catalog,
                                          std::map<std::string, int64_t>* rejected) {
  std::vector<Parallelism> out;
  const Parallelism& req = s.parallelism;
  const ModelSpec& m = s.workload.model;
  const int g = s.cluster.num_gpus;
  const int64_t batch = s.workload.global_batch;
  const Accelerator* acc = catalog.FindAccelerator(s.cluster.accelerator);
  const int domain = acc == nullptr ? 8 : DomainSize(*acc, s.cluster.gpus_per_node);
  auto reject = [rejected](const char* why, int64_t n = 1) {
    if (rejected != nullptr) (*rejected)[why] += n;
  };

  const FrameworkCapabilities& caps = CapabilitiesOf(s.framework);
  std::vector<int> tps;
  if (req.tp > 0) {
    tps = {req.tp};
  } else if (!caps.tensor_parallel) {
    tps = {1};
  } else {
    // Beyond two NVLink domains tensor parallelism only loses; keep one step past the domain
    // so the planner can show that.
    for (int t : Divisors(std::gcd(m.heads, g), std::max(2 * domain, 8))) {
      if (m.ffn_hidden % t == 0) tps.push_back(t);
    }
  }
  std::vector<Recompute> rcs =
      req.recompute != Recompute::kUnspecified
          ? std::vector<Recompute>{req.recompute}
          : std::vector<Recompute>{Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  auto shardings_for = [&](int pp) {
    if (req.sharding != Sharding::kUnspecified) return std::vector<Sharding>{req.sharding};
    return pp > 1 ? caps.pipeline_shardings : caps.shardings;
  };
  for (int tp : tps) {
    if (g % tp != 0) continue;
    std::vector<int> pps = req.pp > 0               ? std::vector<int>{req.pp}
                           : caps.pipeline_parallel ? Divisors(m.layers, 64)
                                                    : std::vector<int>{1};
    for (int pp : pps) {
      if ((g / tp) % pp != 0) {
        reject("GPU count not divisible by tp*pp");
        continue;
      }
      std::vector<int> vpps;
      if (req.vpp > 0) {
        vpps = {req.vpp};
      } else if (pp == 1 || !caps.interleaved_pipeline) {
        vpps = {1};
      } else {
        for (int v : {1, 2, 4}) {
          if (m.layers % (pp * v) == 0) vpps.push_back(v);
        }
      }
      std::vector<int> cps;
      if (req.cp > 0) {
        cps = {req.cp};
      } else if (!caps.context_parallel) {
        cps = {1};
      } else {
        for (int c = 1; c <= 32; c *= 2) {
          if (c > 1 && (s.workload.seq_len % (2 * c) != 0 || s.workload.seq_len / c < 1024)) break;
          cps.push_back(c);
        }
      }
      for (int cp : cps) {
        if ((g / tp / pp) % cp != 0) {
          reject("GPU count not divisible by tp*pp*cp");
          continue;
        }
        const int dp = g / (tp * pp * cp);
        if (req.dp > 0 && req.dp != dp) {
          reject("dp differs from the requested dp");
          continue;
        }
        if (batch % dp != 0) {
          reject("global batch not divisible by dp");
          continue;
        }
        const int64_t local = batch / dp;
        std::vector<int> mbs;
        if (req.micro_batch > 0) {
          if (local % req.micro_batch != 0) {
            reject("micro batch does not divide the per-replica batch");
            continue;
          }
          mbs = {req.micro_batch};
        } else {
          for (int64_t b = 1; b <= local && b <= 256; b *= 2) {
            if (local % b == 0) mbs.push_back(static_cast<int>(b));
          }
          if (local <= 256 && (local & (local - 1)) != 0) mbs.push_back(static_cast<int>(local));
        }
        const int n_dp = dp * cp;
        const int per_domain = std::max(1, std::min(domain / tp, n_dp));
        for (Sharding sh : shardings_for(pp)) {
          std::vector<int> groups = {0};
          if (sh == Sharding::kHsdp) {
            if (req.shard_group > 0) {
              groups = {req.shard_group};
            } else if (per_domain > 1 && per_domain < n_dp) {
              groups = {per_domain};
            } else {
              continue;  // HSDP would equal FSDP or DDP here
            }
          }
          for (int sg : groups) {
            if (sh == Sharding::kHsdp && n_dp % sg != 0) {
              reject("shard group does not divide dp*cp");
              continue;
            }
            if (vpps.empty()) {
              reject("layers not divisible by pp*vpp");
              continue;
            }
            for (int mb : mbs) {
              for (Recompute rc : rcs) {
                Parallelism p;
                p.tp = tp;
                p.pp = pp;
                p.cp = cp;
                p.dp = dp;
                p.sharding = sh;
                p.shard_group = sh == Sharding::kHsdp ? sg : 0;
                p.micro_batch = mb;
                p.recompute = rc;
                p.sequence_parallel = req.tp > 0 ? (req.sequence_parallel && tp > 1) : tp > 1;
                for (int v : vpps) {
                  p.vpp = v;
                  out.push_back(p);
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

bool EvaluateLayouts(const StepModel& model, const std::vector<Parallelism>& layouts, size_t begin,
                     size_t end, const PlanOptions& options, PlanResult* result,
                     int64_t progress_offset, int64_t progress_total) {
  std::vector<Prediction>& top = result->top;
  const int k = std::max(1, options.top_k);
  for (size_t i = begin; i < end; ++i) {
    const Parallelism& p = layouts[i];
    ++result->evaluated_count;
    if (options.progress && options.progress_every > 0 &&
        result->evaluated_count % options.progress_every == 0) {
      if (!options.progress(
              progress_offset + result->evaluated_count,
              progress_total > 0 ? progress_total : static_cast<int64_t>(layouts.size()))) {
        return false;
      }
    }
    const MemoryBreakdown mem = model.Memory(p);
    if (!mem.fits) {
      ++result->infeasible_count;
      ++result->infeasible_reasons["does not fit in memory"];
      continue;
    }
    Prediction pred = model.Evaluate(p, &mem);
    if (static_cast<int>(top.size()) >= k && !Better(pred, top.back(), options.objective)) {
      continue;
    }
    top.push_back(std::move(pred));
    KeepTop(options.objective, k, &top);
  }
  return true;
}

void MergeResults(const PlanOptions& options, PlanResult* into, PlanResult&& from) {
  into->evaluated_count += from.evaluated_count;
  into->infeasible_count += from.infeasible_count;
  for (auto& [reason, n] : from.infeasible_reasons) into->infeasible_reasons[reason] += n;
  for (Prediction& p : from.top) into->top.push_back(std::move(p));
  KeepTop(options.objective, std::max(1, options.top_k), &into->top);
}

absl::StatusOr<PlanResult> Plan(const Scenario& s, const Catalog& catalog, const Profile& profile,
                                const PlanOptions& options) {
  StepModel model(s, catalog, profile);
  if (!model.status().ok()) return model.status();
  PlanResult result;
  std::vector<Parallelism> layouts = EnumerateLayouts(s, catalog, &result.infeasible_reasons);
  for (const auto& [reason, n] : result.infeasible_reasons) {
    result.infeasible_count += n;
    result.evaluated_count += n;
  }
  if (static_cast<int64_t>(layouts.size()) > options.max_layouts) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the search has ", layouts.size(), " layouts, over the limit of ", options.max_layouts));
  }
  if (!EvaluateLayouts(model, layouts, 0, layouts.size(), options, &result)) {
    return absl::CancelledError("the search was cancelled");
  }
  return result;
}

}  // namespace scalecast
