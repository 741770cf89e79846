#include "model/calibration.h"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "model/planner.h"
#include "model/predictor.h"
#include "model/status_macros.h"
#include "model/step.h"
#include "model/uncertainty.h"
#include "model/workload.h"

namespace scalecast {
namespace {

// A run prepared for repeated prediction: its resolved scenario and the layout to predict.
struct Prepared {
  const Measurement* run = nullptr;
  Scenario scenario;
  bool needs_plan = false;
  Parallelism layout;
  std::string failure;
};

std::vector<Prepared> Prepare(const std::vector<const Measurement*>& runs, const Catalog& catalog) {
  std::vector<Prepared> out;
  out.reserve(runs.size());
  for (const Measurement* m : runs) {
    Prepared p;
    p.run = m;
    absl::StatusOr<Scenario> s = ResolveScenario(m->scenario, catalog);
    if (!s.ok()) {
      p.failure = std::string(s.status().message());
    } else {
      p.scenario = *std::move(s);
      p.needs_plan = !LayoutComplete(p.scenario.parallelism);
      p.layout = p.scenario.parallelism;
    }
    out.push_back(std::move(p));
  }
  return out;
}

// Chooses layouts for the runs whose layout is partly blank, with the current profile.
void PlanLayouts(std::vector<Prepared>* rows, const Catalog& catalog, const Profile& profile) {
  for (Prepared& p : *rows) {
    if (!p.needs_plan) continue;
    p.failure.clear();
    PlanOptions options;
    options.top_k = 1;
    // A measured run ran: its unstated layout parts are chosen among all that fit, with no HBM
    // headroom held back (the headroom is a margin for planning runs not yet made).
    options.hbm_headroom = 0;
    const StepModel model(p.scenario, catalog, profile);
    absl::StatusOr<PlanResult> plan = Plan(model, p.scenario, catalog, profile, options);
    if (plan.ok() && plan->top.empty() &&
        plan->infeasible_reasons.count(std::string(kDoesNotFitReason)) != 0) {
      // The run was measured, so its layout fitted: where the memory model disagrees, predict
      // the best of the run's layouts anyway, however far it disagrees (the row carries the
      // "does not fit" warning, and Validate counts it).
      options.overstatement = std::numeric_limits<double>::infinity();
      plan = PlanDespiteMemory(model, p.scenario, catalog, profile, options);
    }
    if (!plan.ok() || plan->top.empty()) {
      p.failure = plan.ok() ? absl::StrCat("no layout fits (", plan->InfeasibleSummary(), ")")
                            : std::string(plan.status().message());
      continue;
    }
    p.layout = plan->top.front().layout;
  }
}

double PredictRow(const Prepared& p, const Catalog& catalog, const Profile& profile,
                  bool* fits = nullptr) {
  StepModel model(p.scenario, catalog, profile);
  if (!model.status().ok()) return 0;
  const Prediction pred = model.Evaluate(p.layout);
  if (fits != nullptr) *fits = pred.memory.fits;
  return pred.tokens_per_s_per_gpu;
}

ValidationReport Report(const std::vector<Prepared>& rows, const Catalog& catalog,
                        const Profile& profile) {
  ValidationReport r;
  for (const Prepared& p : rows) {
    ValidationRow row;
    row.measurement = p.run;
    row.failure = p.failure;
    if (p.failure.empty()) {
      row.layout = p.layout;
      row.predicted_tokens_per_s_per_gpu = PredictRow(p, catalog, profile, &row.fits);
      if (!row.fits) ++r.not_fitting_count;
      row.error = row.predicted_tokens_per_s_per_gpu / p.run->tokens_per_s_per_gpu - 1;
    }
    r.rows.push_back(std::move(row));
  }
  SummariseRows(&r);
  return r;
}

// Solves A x = b for a small dense symmetric positive-definite system (Gaussian elimination
// with partial pivoting; n ~ 30).
std::vector<double> Solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t c = 0; c < n; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < n; ++r) {
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    }
    std::swap(a[c], a[piv]);
    std::swap(b[c], b[piv]);
    if (std::fabs(a[c][c]) < 1e-300) continue;
    for (size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(n, 0.0);
  for (size_t i = n; i-- > 0;) {
    double s = b[i];
    for (size_t k = i + 1; k < n; ++k) s -= a[i][k] * x[k];
    x[i] = std::fabs(a[i][i]) < 1e-300 ? 0.0 : s / a[i][i];
  }
  return x;
}

// The fit's loss on a run's log residual r: pseudo-Huber with scale kRobustScale, 2 d^2 (sqrt(1 +
// (r/d)^2) - 1), quadratic for runs within about d of the model and linear beyond, given to
// Levenberg-Marquardt as the residual sign(r) sqrt(loss) (Triggs et al. 2000, "Bundle Adjustment
// - A Modern Synthesis", section 3.3). A run a hundred percent off under conditions no input
// describes (a degraded fabric, memory pressure) then weighs like a few runs 25 % off, not like
// hundreds of runs 5 % off, and cannot drag the physics fitted on the others.
constexpr double kRobustScale = 0.25;

double RobustResidual(double r) {
  const double d = kRobustScale;
  const double loss = 2 * d * d * (std::sqrt(1 + (r / d) * (r / d)) - 1);
  return std::copysign(std::sqrt(loss), r);
}

struct Problem {
  const std::vector<Prepared>* rows;
  const Catalog* catalog;
  Profile* profile;
  std::vector<ParamRef> params;
  double prior_weight;
  std::vector<double> weights;  // per parameter; empty: prior_weight for each
  // The runs' residuals under the robust loss (the profile fit over many sources); false: plain
  // least squares (the few-shot layer, whose Student-t priors already weigh a user's few runs).
  bool robust = false;

  std::vector<double> Get() const {
    std::vector<double> x;
    for (const ParamRef& p : params) x.push_back(std::log(*p.value));
    return x;
  }
  void Set(const std::vector<double>& x) const {
    for (size_t j = 0; j < params.size(); ++j) {
      *params[j].value = std::clamp(std::exp(x[j]), params[j].lo, params[j].hi);
    }
  }
  std::vector<double> Residuals() const {
    std::vector<double> r;
    for (const Prepared& p : *rows) {
      if (!p.failure.empty()) continue;
      const double pred = PredictRow(p, *catalog, *profile);
      const double lr = pred > 0 ? std::log(pred / p.run->tokens_per_s_per_gpu) : 5.0;
      r.push_back(robust ? RobustResidual(lr) : lr);
    }
    for (size_t j = 0; j < params.size(); ++j) {
      const ParamRef& p = params[j];
      const double w = std::sqrt(weights.empty() ? prior_weight : weights[j]);
      r.push_back(w * (std::log(std::max(*p.value, 1e-6)) - std::log(std::max(p.prior, 1e-6))));
    }
    return r;
  }
};

double SumSq(const std::vector<double>& r) {
  double s = 0;
  for (double v : r) s += v * v;
  return s;
}

int Optimise(Problem& pb, int max_iterations) {
  std::vector<double> x = pb.Get();
  pb.Set(x);
  x = pb.Get();
  std::vector<double> r = pb.Residuals();
  double cost = SumSq(r);
  double mu = 1e-2;
  int it = 0;
  const size_t n = x.size();
  for (; it < max_iterations; ++it) {
    // Numeric Jacobian, forward differences in log-parameter space.
    std::vector<std::vector<double>> jt(n);
    for (size_t j = 0; j < n; ++j) {
      std::vector<double> xp = x;
      xp[j] += 1e-4;
      pb.Set(xp);
      std::vector<double> rp = pb.Residuals();
      jt[j].resize(r.size());
      for (size_t i = 0; i < r.size(); ++i) jt[j][i] = (rp[i] - r[i]) / 1e-4;
    }
    pb.Set(x);
    std::vector<std::vector<double>> jtj(n, std::vector<double>(n, 0.0));
    std::vector<double> jtr(n, 0.0);
    for (size_t a = 0; a < n; ++a) {
      for (size_t i = 0; i < r.size(); ++i) jtr[a] += jt[a][i] * r[i];
      for (size_t b = a; b < n; ++b) {
        double s = 0;
        for (size_t i = 0; i < r.size(); ++i) s += jt[a][i] * jt[b][i];
        jtj[a][b] = jtj[b][a] = s;
      }
    }
    bool improved = false;
    for (int tries = 0; tries < 8 && !improved; ++tries) {
      std::vector<std::vector<double>> a = jtj;
      std::vector<double> b(n);
      for (size_t k = 0; k < n; ++k) {
        a[k][k] += mu * (jtj[k][k] + 1e-9);
        b[k] = -jtr[k];
      }
      std::vector<double> delta = Solve(a, b);
      std::vector<double> xn = x;
      for (size_t k = 0; k < n; ++k) xn[k] += delta[k];
      pb.Set(xn);
      xn = pb.Get();  // clamped
      std::vector<double> rn = pb.Residuals();
      const double cn = SumSq(rn);
      if (cn < cost) {
        const double gain = cost - cn;
        x = xn;
        r = rn;
        cost = cn;
        mu = std::max(mu / 3, 1e-7);
        improved = true;
        if (gain < 1e-7 * cost) it = max_iterations;  // converged
      } else {
        mu *= 4;
      }
    }
    pb.Set(x);
    if (!improved) break;
  }
  return it;
}

std::vector<const Measurement*> Pointers(const std::vector<Measurement>& runs) {
  std::vector<const Measurement*> out;
  for (const Measurement& m : runs) out.push_back(&m);
  return out;
}

// One level up the same pooling: a generation the data did not cover (Volta when its only
// source is held out, Gaudi, Trainium, CDNA 3, TPU v3 and v6e) gets its microbenchmark prior
// (PriorFor) with gemm_eff times the median, over the generations the data covered, of fitted
// gemm_eff over that generation's prior. A best-shape GEMM rate overstates what a training step's
// shapes and non-GEMM work keep of it: by 5-15 % on every generation with runs (fitted over
// prior in default_profile.txt: hopper 0.85, ampere 0.87, blackwell 0.87, TPU v4 0.88, volta
// 0.91, TPU v5e 0.93, cdna2 0.94, TPU v5p 0.95; cdna4 1.15 above it), so an unseen generation's
// bare prior would be priced faster than any seen one. The median, not a mean, so that one
// generation's outlier (cdna4) does not move it. Generations the starting profile already holds
// (a user's fit starting from the default profile) keep their values.
void PoolUnseenGenerations(
    const Catalog& catalog,
    const std::map<std::string, std::vector<std::pair<std::string, int>>>& seen, Profile* profile) {
  std::vector<double> shares;
  for (const auto& [generation, members] : seen) {
    shares.push_back(profile->ForAccelerator(generation).gemm_eff / PriorFor(generation).gemm_eff);
  }
  if (shares.empty()) return;
  std::sort(shares.begin(), shares.end());
  const size_t n = shares.size();
  const double share = n % 2 ? shares[n / 2] : 0.5 * (shares[n / 2 - 1] + shares[n / 2]);
  for (const auto& [id, acc] : catalog.accelerators()) {
    const std::string generation(GenerationOf(acc.family));
    if (seen.count(generation) > 0 || profile->accelerators.count(acc.family) > 0 ||
        profile->accelerators.count(generation) > 0) {
      continue;
    }
    AcceleratorParams p = PriorFor(generation);
    p.gemm_eff *= share;
    profile->accelerators[generation] = p;
  }
}

absl::StatusOr<Profile> FitOn(const std::vector<const Measurement*>& runs, const Catalog& catalog,
                              const Profile& start, const FitOptions& options, int* iterations) {
  std::vector<Prepared> rows = Prepare(runs, catalog);
  std::map<std::string, int> family_rows;
  int usable = 0;
  for (const Prepared& p : rows) {
    if (!p.failure.empty()) continue;
    ++usable;
    ++family_rows[catalog.FindAccelerator(p.scenario.cluster.accelerator)->family];
  }
  if (usable == 0) return absl::FailedPreconditionError("no usable measured runs to fit on");
  Profile profile = start;
  std::vector<std::string> families;
  for (const auto& [f, n] : family_rows) families.push_back(f);
  std::vector<ParamRef> params;
  for (const ParamRef& ref : FittableParams(&profile, families)) {
    if (!ref.layer_only) params.push_back(ref);
  }
  Problem pb{&rows, &catalog, &profile, std::move(params), options.prior_weight, {}, true};
  // The planner's choice for partly blank layouts depends on the parameters: alternate.
  int total = 0;
  for (int round = 0; round < 3; ++round) {
    PlanLayouts(&rows, catalog, profile);
    total += Optimise(pb, options.max_iterations / 3 + 1);
  }
  if (iterations != nullptr) *iterations = total;
  // Partial pooling: each generation the data covered gets the row-weighted geometric mean of
  // its fitted families, which a family without data of its own (B300 beside B200, GB200 and
  // GB300) then uses instead of the bare prior.
  std::map<std::string, std::vector<std::pair<std::string, int>>> by_generation;
  for (const auto& [f, n] : family_rows) {
    by_generation[std::string(GenerationOf(f))].push_back({f, n});
  }
  for (const auto& [generation, members] : by_generation) {
    if (members.size() == 1 && members[0].first == generation) continue;
    double n = 0, g = 0, f8 = 0, at = 0, hb = 0;
    for (const auto& [f, count] : members) {
      const AcceleratorParams& a = profile.accelerators[f];
      g += count * std::log(a.gemm_eff);
      f8 += count * std::log(a.fp8_gemm_ratio);
      at += count * std::log(a.attn_eff);
      hb += count * std::log(a.hbm_eff);
      n += count;
    }
    profile.accelerators[generation] =
        AcceleratorParams{std::exp(g / n), std::exp(f8 / n), std::exp(at / n), std::exp(hb / n)};
  }
  PoolUnseenGenerations(catalog, by_generation, &profile);
  // What the profile has seen, for the band's widening (model/uncertainty.h).
  profile.band.seen.clear();
  for (const Prepared& p : rows) {
    if (!p.failure.empty()) continue;
    const Accelerator* acc = catalog.FindAccelerator(p.scenario.cluster.accelerator);
    ++profile.band.seen[SeenKey(p.scenario.framework, *acc)];
    profile.band.max_gpus = std::max(profile.band.max_gpus, p.scenario.cluster.num_gpus);
  }
  return profile;
}

}  // namespace

ErrorStats Summarise(const std::vector<double>& abs_errors) {
  ErrorStats s;
  s.count = static_cast<int>(abs_errors.size());
  if (abs_errors.empty()) return s;
  double sum = 0;
  for (double e : abs_errors) sum += e;
  s.mape = sum / abs_errors.size();
  s.median_ape = Median(abs_errors);
  return s;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

absl::StatusOr<double> MeasuredMfu(const Measurement& m, const Catalog& catalog) {
  absl::StatusOr<ResolvedScenario> r = Resolve(m.scenario, catalog, "run");
  if (!r.ok()) return r.status();
  const Workload& w = r->scenario.workload;
  return ModelFlopsPerToken(Shape(w.model), w.seq_len) * m.tokens_per_s_per_gpu /
         r->accelerator->SixteenBitPeakFlops();
}

void SummariseRows(ValidationReport* report) {
  std::vector<double> all;
  std::map<std::string, std::vector<double>> by_fw, by_acc, by_source, by_label;
  report->failed_count = 0;
  for (const ValidationRow& row : report->rows) {
    if (!row.failure.empty()) {
      ++report->failed_count;
      continue;
    }
    const Measurement& m = *row.measurement;
    const double ae = std::fabs(row.error);
    all.push_back(ae);
    by_fw[m.scenario.framework].push_back(ae);
    by_acc[m.scenario.cluster.accelerator].push_back(ae);
    by_source[m.source].push_back(ae);
    for (const auto& [k, v] : m.labels) by_label[absl::StrCat(k, "=", v)].push_back(ae);
  }
  report->overall = Summarise(all);
  const auto fill = [](const std::map<std::string, std::vector<double>>& in,
                       std::map<std::string, ErrorStats>* out) {
    out->clear();
    for (const auto& [k, v] : in) (*out)[k] = Summarise(v);
  };
  fill(by_fw, &report->by_framework);
  fill(by_acc, &report->by_accelerator);
  fill(by_source, &report->by_source);
  fill(by_label, &report->by_label);
}

ValidationReport Validate(const std::vector<Measurement>& runs, const Catalog& catalog,
                          const Profile& profile) {
  std::vector<Prepared> rows = Prepare(Pointers(runs), catalog);
  PlanLayouts(&rows, catalog, profile);
  return Report(rows, catalog, profile);
}

Measurement AsAsked(const Measurement& m, StatedFacts facts) {
  Measurement out = m;
  if (facts == StatedFacts::kAll) return out;
  out.scenario.stack = StackOptions{};
  if (facts == StatedFacts::kVersion) out.scenario.stack.version = m.scenario.stack.version;
  if (facts == StatedFacts::kNone) out.scenario.framework.clear();
  return out;
}

std::vector<Measurement> AsAsked(const std::vector<Measurement>& runs, StatedFacts facts) {
  std::vector<Measurement> out;
  out.reserve(runs.size());
  for (const Measurement& m : runs) out.push_back(AsAsked(m, facts));
  return out;
}

namespace {

// The held-out rows' residuals: each row's |error|, and the log residual of each row predicted,
// divided by its widening factor under its fold's profile, with the row it came from.
struct HeldOutResiduals {
  std::vector<double> all;
  std::vector<std::pair<std::string, double>> scaled;  // (group, log residual / factor)
  std::vector<size_t> row_of_scaled;                   // index into the report's rows
  std::vector<double> factors;
};

// Group `key` held out: the profile fitted on the other runs from `start` (nullopt where there
// are none or the fit fails).
std::optional<Profile> FitFold(const std::vector<Measurement>& runs, const Catalog& catalog,
                               const Profile& start, const FitOptions& options,
                               const std::function<std::string(const Measurement&)>& group,
                               const std::string& key) {
  std::vector<const Measurement*> train;
  for (const Measurement& m : runs) {
    if (group(m) != key) train.push_back(&m);
  }
  if (train.empty()) return std::nullopt;
  absl::StatusOr<Profile> fitted = FitOn(train, catalog, start, options, nullptr);
  if (!fitted.ok()) return std::nullopt;
  return *std::move(fitted);
}

// Group `key`'s runs, as asked (`asked`, or as measured where it is null), predicted with its
// fold's profile, into `out` and `res`.
void PredictFold(const std::vector<Measurement>& runs, const Catalog& catalog,
                 const Profile& fitted, const std::function<std::string(const Measurement&)>& group,
                 const std::vector<Measurement>* asked, const std::string& key, HoldOutReport* out,
                 HeldOutResiduals* res) {
  std::vector<const Measurement*> test;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (group(runs[i]) == key) test.push_back(asked != nullptr ? &(*asked)[i] : &runs[i]);
  }
  std::vector<Prepared> rows = Prepare(test, catalog);
  PlanLayouts(&rows, catalog, fitted);
  ValidationReport r = Report(rows, catalog, fitted);
  out->by_group[key] = r.overall;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    ValidationRow& row = r.rows[i];
    if (row.failure.empty()) {
      res->all.push_back(std::fabs(row.error));
      const Accelerator* acc = catalog.FindAccelerator(rows[i].scenario.cluster.accelerator);
      const double f = ExtrapolationOf(rows[i].scenario, *acc, fitted).factor;
      res->scaled.push_back({key, std::log(1 + row.error) / f});
      res->row_of_scaled.push_back(out->rows.size());
      res->factors.push_back(f);
    }
    out->rows.push_back(std::move(row));
  }
}

// The q-quantile of sorted `v`, interpolated.
double Quantile(const std::vector<double>& v, double q) {
  const double pos = q * (v.size() - 1);
  const size_t i = static_cast<size_t>(pos);
  const double frac = pos - i;
  return i + 1 < v.size() ? v[i] * (1 - frac) + v[i + 1] * frac : v.back();
}

struct NestedBand {
  double coverage = 0, median_width = 0;
};

// The band at tail `alpha` checked honestly: each row against the quantiles of the other groups'
// residuals only. `rows` set: each row's band is recorded in it.
NestedBand CheckBand(const HeldOutResiduals& res, double alpha, std::vector<ValidationRow>* rows) {
  int covered = 0, counted = 0;
  std::vector<double> widths;
  for (size_t i = 0; i < res.scaled.size(); ++i) {
    std::vector<double> others;
    for (const auto& [k, r] : res.scaled) {
      if (k != res.scaled[i].first) others.push_back(r);
    }
    if (others.size() < 10) continue;
    std::sort(others.begin(), others.end());
    const double lo = Quantile(others, alpha), hi = Quantile(others, 1 - alpha);
    const double r = res.scaled[i].second;
    ++counted;
    covered += (r >= lo && r <= hi) ? 1 : 0;
    // Predicted / measured = 1 + error, so measured / predicted = exp(-r * factor).
    widths.push_back(std::exp(-lo * res.factors[i]) - std::exp(-hi * res.factors[i]));
    if (rows != nullptr) {
      ValidationRow& row = (*rows)[res.row_of_scaled[i]];
      row.band_low = row.predicted_tokens_per_s_per_gpu * std::exp(-hi * res.factors[i]);
      row.band_high = row.predicted_tokens_per_s_per_gpu * std::exp(-lo * res.factors[i]);
    }
  }
  NestedBand n;
  if (counted > 0) {
    n.coverage = static_cast<double>(covered) / counted;
    std::sort(widths.begin(), widths.end());
    n.median_width = widths[widths.size() / 2];
  }
  return n;
}

// The band: quantiles of the scaled held-out residuals. Residuals within a source are
// correlated (one stack, one cluster), so the 10 % / 90 % quantiles of the other sources'
// residuals cover fewer than 80 % of a new source's runs: the tail level is the one whose
// group-by-group coverage is nearest 80 %.
void FitBand(const HeldOutResiduals& res, HoldOutReport* out) {
  std::vector<double> every;
  for (const auto& [k, r] : res.scaled) every.push_back(r);
  if (every.empty()) return;
  std::sort(every.begin(), every.end());
  double best_alpha = 0.1, best_gap = 1e9;
  for (double alpha : {0.1, 0.08, 0.06, 0.05, 0.04, 0.03, 0.02, 0.01}) {
    const double gap = std::fabs(CheckBand(res, alpha, nullptr).coverage - 0.8);
    if (gap < best_gap) {
      best_gap = gap;
      best_alpha = alpha;
    }
  }
  const NestedBand chosen = CheckBand(res, best_alpha, &out->rows);
  out->band_coverage = chosen.coverage;
  out->band_median_width = chosen.median_width;
  out->band_tail = best_alpha;
  out->band_low_ratio = std::exp(-Quantile(every, 1 - best_alpha));
  out->band_high_ratio = std::exp(-Quantile(every, best_alpha));
}

// Leave-one-group-out once: each fold fitted on the other groups' runs as measured, its group
// predicted as each of `asked` gives it (null: as measured); one report per entry of `asked`.
std::vector<HoldOutReport> LeaveOneGroupOutAsAsked(
    const std::vector<Measurement>& runs, const Catalog& catalog, const Profile& start,
    const FitOptions& options, const std::function<std::string(const Measurement&)>& group,
    const std::vector<const std::vector<Measurement>*>& asked) {
  std::vector<HoldOutReport> out(asked.size());
  std::vector<HeldOutResiduals> res(asked.size());
  std::set<std::string> groups;
  for (const Measurement& m : runs) groups.insert(group(m));
  for (const std::string& key : groups) {
    if (key.empty()) continue;  // runs in no group always train
    const std::optional<Profile> fitted = FitFold(runs, catalog, start, options, group, key);
    if (!fitted) continue;
    for (size_t i = 0; i < asked.size(); ++i) {
      PredictFold(runs, catalog, *fitted, group, asked[i], key, &out[i], &res[i]);
    }
  }
  for (size_t i = 0; i < asked.size(); ++i) {
    out[i].overall = Summarise(res[i].all);
    FitBand(res[i], &out[i]);
  }
  return out;
}

}  // namespace

HoldOutReport LeaveOneGroupOut(const std::vector<Measurement>& runs, const Catalog& catalog,
                               const Profile& start, const FitOptions& options,
                               const std::function<std::string(const Measurement&)>& group,
                               const std::vector<Measurement>* asked) {
  return LeaveOneGroupOutAsAsked(runs, catalog, start, options, group, {asked}).front();
}

std::map<StatedFacts, HoldOutReport> LeaveOneSourceOutByFacts(
    const std::vector<Measurement>& runs, const Catalog& catalog, const Profile& start,
    const FitOptions& options, absl::Span<const StatedFacts> levels) {
  std::vector<std::vector<Measurement>> asked;
  asked.reserve(levels.size());
  std::vector<const std::vector<Measurement>*> sets;
  for (StatedFacts facts : levels) {
    sets.push_back(facts == StatedFacts::kAll ? nullptr
                                              : &asked.emplace_back(AsAsked(runs, facts)));
  }
  std::vector<HoldOutReport> reports = LeaveOneGroupOutAsAsked(
      runs, catalog, start, options, [](const Measurement& m) { return m.source; }, sets);
  std::map<StatedFacts, HoldOutReport> out;
  for (size_t i = 0; i < levels.size(); ++i) out[levels[i]] = std::move(reports[i]);
  return out;
}

HoldOutReport LeaveOneFrameworkOut(const std::vector<Measurement>& runs, const Catalog& catalog,
                                   const Profile& start, const FitOptions& options) {
  return LeaveOneGroupOut(runs, catalog, start, options,
                          [](const Measurement& m) { return m.scenario.framework; });
}

HoldOutReport LeaveOneSourceOut(const std::vector<Measurement>& runs, const Catalog& catalog,
                                const Profile& start, const FitOptions& options,
                                const std::vector<Measurement>* asked) {
  return LeaveOneGroupOut(
      runs, catalog, start, options, [](const Measurement& m) { return m.source; }, asked);
}

absl::StatusOr<FitResult> Fit(const std::vector<Measurement>& runs, const Catalog& catalog,
                              const Profile& start, const FitOptions& options,
                              bool cross_validate) {
  FitResult result;
  result.before = Validate(runs, catalog, start);
  absl::StatusOr<Profile> fitted =
      FitOn(Pointers(runs), catalog, start, options, &result.iterations);
  if (!fitted.ok()) return fitted.status();
  result.profile = *std::move(fitted);
  result.after = Validate(runs, catalog, result.profile);
  if (cross_validate) {
    std::set<std::string> sources;
    for (const Measurement& m : runs) sources.insert(m.source);
    if (sources.size() > 1) {
      std::map<StatedFacts, HoldOutReport> by_facts =
          LeaveOneSourceOutByFacts(runs, catalog, start, options, kStatedFactsLevels);
      const HoldOutReport& h = by_facts[StatedFacts::kAll];
      result.cross_validated_mape = h.overall.mape;
      result.cross_validated_by_group = h.by_group;
      result.profile.band.low_ratio = h.band_low_ratio;
      result.profile.band.high_ratio = h.band_high_ratio;
      for (const auto& [facts, fewer] : by_facts) {
        if (facts == StatedFacts::kAll || fewer.overall.count == 0) continue;
        result.profile.band.fewer_facts[facts] = {fewer.band_low_ratio, fewer.band_high_ratio};
      }
      result.layer_priors = LayerPriorsFromHeldOut(h.rows);
    } else {
      // 5-fold by position.
      std::vector<double> all;
      for (int fold = 0; fold < 5; ++fold) {
        std::vector<const Measurement*> train, test;
        for (size_t i = 0; i < runs.size(); ++i) {
          (static_cast<int>(i % 5) == fold ? test : train).push_back(&runs[i]);
        }
        if (train.empty() || test.empty()) continue;
        absl::StatusOr<Profile> p = FitOn(train, catalog, start, options, nullptr);
        if (!p.ok()) continue;
        std::vector<Prepared> rows = Prepare(test, catalog);
        PlanLayouts(&rows, catalog, *p);
        ValidationReport r = Report(rows, catalog, *p);
        for (const ValidationRow& row : r.rows) {
          if (row.failure.empty()) all.push_back(std::fabs(row.error));
        }
      }
      const ErrorStats s = Summarise(all);
      result.cross_validated_mape = s.mape;
      result.cross_validated_by_group["5-fold"] = s;
    }
  }
  return result;
}

namespace {

// log of the density of s2 = the sample variance of k + 1 runs of a stack whose scatter is drawn
// from the scaled inverse chi-square prior (nu0, sigma02): s2 / sigma02 is F(k, nu0).
double LogScatterLikelihood(double s2, int k, double nu0, double sigma02) {
  const double kd = static_cast<double>(k), x = s2 / sigma02;
  return std::lgamma((kd + nu0) / 2) - std::lgamma(kd / 2) - std::lgamma(nu0 / 2) +
         kd / 2 * std::log(kd / nu0) + (kd / 2 - 1) * std::log(x) -
         (kd + nu0) / 2 * std::log1p(kd * x / nu0) - std::log(sigma02);
}

}  // namespace

namespace {

// One held-out stack's residuals (log of 1 + error): their mean and scatter.
struct StackResiduals {
  double mean, s2;
  int k;  // degrees of freedom: rows - 1
};

// The held-out stacks with two rows or more (a source's rows of one framework on one
// accelerator), with the pooled within-stack sums they give.
struct HeldOutStacks {
  std::vector<StackResiduals> stacks;
  double within = 0;  // sum of squared deviations from each stack's mean
  int dof = 0, rows = 0;
};

HeldOutStacks StacksOf(const std::vector<ValidationRow>& rows) {
  std::map<std::string, std::vector<double>> by_stack;
  for (const ValidationRow& row : rows) {
    if (!row.failure.empty() || row.measurement == nullptr || !(row.error > -1)) continue;
    if (!std::isfinite(row.error)) continue;
    const Measurement& m = *row.measurement;
    by_stack[absl::StrCat(m.source, "\n", m.scenario.framework, "\n",
                          m.scenario.cluster.accelerator)]
        .push_back(std::log1p(row.error));
  }
  HeldOutStacks out;
  for (const auto& [stack, v] : by_stack) {
    if (v.size() < 2) continue;
    double m = 0, ss = 0;
    for (double x : v) m += x;
    m /= static_cast<double>(v.size());
    for (double x : v) ss += (x - m) * (x - m);
    const int k = static_cast<int>(v.size()) - 1;
    out.within += ss;
    out.dof += k;
    out.rows += static_cast<int>(v.size());
    // A stack whose rows are identical (a repeated figure) has no scatter to measure.
    out.stacks.push_back({m, std::max(ss / k, 1e-8), k});
  }
  return out;
}

// The scatter prior (sigma0, nu0) by maximum likelihood: a grid in log space (nu0 0.25-1000,
// sigma0 0.1-10x the pooled scatter), refined once around the best point.
std::pair<double, double> ScatterPrior(const std::vector<StackResiduals>& stacks, double pooled) {
  double best = -std::numeric_limits<double>::infinity(), nu0 = 1, sigma0 = pooled;
  auto search = [&](double nu_lo, double nu_hi, double s_lo, double s_hi) {
    constexpr int kSteps = 120;
    const double nu_c = nu0, s_c = sigma0;
    for (int a = 0; a <= kSteps; ++a) {
      const double nu = nu_c * std::exp(nu_lo + (nu_hi - nu_lo) * a / kSteps);
      for (int b = 0; b <= kSteps; ++b) {
        const double sg = s_c * std::exp(s_lo + (s_hi - s_lo) * b / kSteps);
        double ll = 0;
        for (const StackResiduals& src : stacks) {
          ll += LogScatterLikelihood(src.s2, src.k, nu, sg * sg);
        }
        if (ll > best) {
          best = ll;
          nu0 = nu;
          sigma0 = sg;
        }
      }
    }
  };
  search(std::log(0.25), std::log(1000.0), std::log(0.1), std::log(10.0));
  search(-0.1, 0.1, -0.05, 0.05);
  return {sigma0, nu0};
}

// The spread of the stacks' levels (tau) by moments: the spread of their means less each
// stack's own sampling variance, its posterior scatter over its rows.
double LevelSpread(const std::vector<StackResiduals>& stacks, double sigma0, double nu0) {
  double mu = 0;
  for (const StackResiduals& src : stacks) mu += src.mean;
  mu /= static_cast<double>(stacks.size());
  double between = 0, sampling = 0;
  for (const StackResiduals& src : stacks) {
    between += (src.mean - mu) * (src.mean - mu);
    const double posterior = (nu0 * sigma0 * sigma0 + src.k * src.s2) / (nu0 + src.k);
    sampling += posterior / static_cast<double>(src.k + 1);
  }
  between /= static_cast<double>(stacks.size() - 1);
  sampling /= static_cast<double>(stacks.size());
  // The method-of-moments estimate may come out below zero on few stacks: keep at least a
  // quarter of the raw spread of the levels.
  return std::sqrt(std::max(between - sampling, 0.25 * between));
}

}  // namespace

LayerPriors LayerPriorsFromHeldOut(const std::vector<ValidationRow>& rows) {
  const HeldOutStacks held = StacksOf(rows);
  LayerPriors out;
  if (held.stacks.size() < 2 || held.dof == 0) {
    out.derivation = "fallbacks (fewer than two held-out stacks with two rows or more)";
    return out;
  }
  const double pooled = std::sqrt(held.within / held.dof);
  const auto [sigma0, nu0] = ScatterPrior(held.stacks, pooled);
  out.level_spread = LevelSpread(held.stacks, sigma0, nu0);
  out.run_scatter = sigma0;
  out.scatter_dof = nu0;
  out.derivation = absl::StrFormat(
      "leave-one-source-out residuals of %d stacks (%d rows): level spread %.3f, run scatter "
      "%.3f with %.2f degrees of freedom (log; pooled scatter %.3f)",
      static_cast<int>(held.stacks.size()), held.rows, out.level_spread, out.run_scatter,
      out.scatter_dof, pooled);
  return out;
}

LayerPriors LayerPriorsOf(const Profile& profile) {
  auto number = [&profile](const char* key, double* v, double hi) {
    auto it = profile.info.find(key);
    return it != profile.info.end() && absl::SimpleAtod(it->second, v) && *v > 0 && *v < hi;
  };
  LayerPriors out;
  double tau = 0, sigma = 0, nu = 0;
  if (number("layer_level_spread", &tau, 5) && number("layer_run_scatter", &sigma, 5) &&
      number("layer_scatter_dof", &nu, 1e4)) {
    out.level_spread = tau;
    out.run_scatter = sigma;
    out.scatter_dof = nu;
    out.derivation = absl::StrFormat(
        "profile '%s' info.layer_level_spread %.3f, info.layer_run_scatter %.3f and "
        "info.layer_scatter_dof %.2f (its leave-one-source-out residuals)",
        profile.name, tau, sigma, nu);
    return out;
  }
  if (&profile != &Profile::BuiltinDefault()) return LayerPriorsOf(Profile::BuiltinDefault());
  out.derivation = absl::StrFormat(
      "fallbacks: the leave-one-source-out residuals of the built-in profile of 2026-12 "
      "(scalecast-fewshot on the three shared calibration sets): level spread %.3f, run scatter "
      "%.3f with %.2f degrees of freedom (log)",
      out.level_spread, out.run_scatter, out.scatter_dof);
  return out;
}

namespace {

// Step 1 of FitLayer: each run's log residual under `start` and the sensitivity of its log
// prediction to each fittable parameter's log (forward differences of 1 %, backward at an
// upper bound). The level (stack.efficiency) is not listed: its sensitivity is 1 for every run.
struct Sensitivity {
  std::vector<std::string> keys;
  std::vector<double> r0;              // log(predicted / measured) per run, under start
  std::vector<std::vector<double>> j;  // j[param][run]
  std::vector<int> informs;            // runs each parameter informs
  std::vector<double> rms;             // rms of j[param] over the runs
};

Sensitivity MeasureSensitivity(const std::vector<Prepared>& rows, const Catalog& catalog,
                               const Profile& start, const std::vector<std::string>& families,
                               double min_sensitivity) {
  Sensitivity s;
  Profile work = start;
  std::vector<ParamRef> params = FittableParams(&work, families);
  for (const Prepared& p : rows) {
    s.r0.push_back(std::log(PredictRow(p, catalog, work) / p.run->tokens_per_s_per_gpu));
  }
  constexpr double kStep = 0.01;
  for (const ParamRef& ref : params) {
    if (ref.layer_only) continue;
    s.keys.push_back(ref.key);
    const double v = *ref.value;
    double moved = std::clamp(v * std::exp(kStep), ref.lo, ref.hi);
    if (moved == v) moved = std::clamp(v * std::exp(-kStep), ref.lo, ref.hi);
    std::vector<double> column(rows.size(), 0.0);
    const double dl = std::log(moved / v);
    if (dl != 0) {
      *ref.value = moved;
      for (size_t i = 0; i < rows.size(); ++i) {
        const double pred = PredictRow(rows[i], catalog, work);
        const double lp = pred > 0 ? std::log(pred / rows[i].run->tokens_per_s_per_gpu) : s.r0[i];
        column[i] = (lp - s.r0[i]) / dl;
      }
      *ref.value = v;
    }
    int informs = 0;
    double sq = 0;
    for (double d : column) {
      informs += std::fabs(d) >= min_sensitivity ? 1 : 0;
      sq += d * d;
    }
    s.j.push_back(std::move(column));
    s.informs.push_back(informs);
    s.rms.push_back(std::sqrt(sq / static_cast<double>(rows.size())));
  }
  return s;
}

// Step 2: each sensitivity less its mean over the runs (what the level does not already carry);
// a parameter whose centred rms is below min_sensitivity informs no variation (informs 0).
Sensitivity Centred(const Sensitivity& s, double min_sensitivity) {
  Sensitivity c = s;
  const double n = static_cast<double>(s.r0.size());
  for (size_t k = 0; k < c.j.size(); ++k) {
    double mean = 0;
    for (double v : c.j[k]) mean += v;
    mean /= n;
    double sq = 0;
    for (double& v : c.j[k]) {
      v -= mean;
      sq += v * v;
    }
    if (std::sqrt(sq / n) < min_sensitivity) c.informs[k] = 0;
  }
  return c;
}

// The informed parameters in the order a fit should take them up (column-pivoted Gram-Schmidt
// on the sensitivity matrix), stopping at collinearity or the cap.
std::vector<int> OrderCandidates(const Sensitivity& s, const LayerFitOptions& options, int cap) {
  const size_t n = s.r0.size();
  std::vector<std::vector<double>> residual = s.j;
  std::vector<double> own(s.keys.size(), 0.0);
  for (size_t k = 0; k < s.keys.size(); ++k) {
    for (double v : s.j[k]) own[k] += v * v;
    own[k] = std::sqrt(own[k]);
  }
  std::vector<int> order;
  std::vector<bool> taken(s.keys.size(), false);
  while (static_cast<int>(order.size()) < cap) {
    int best = -1;
    double best_norm = 0;
    for (size_t k = 0; k < s.keys.size(); ++k) {
      if (taken[k] || s.informs[k] == 0) continue;
      double norm = 0;
      for (double v : residual[k]) norm += v * v;
      norm = std::sqrt(norm);
      if (norm < options.collinear * own[k]) continue;
      if (norm > best_norm) {
        best_norm = norm;
        best = static_cast<int>(k);
      }
    }
    if (best < 0 || best_norm < options.min_sensitivity) break;
    taken[best] = true;
    order.push_back(best);
    std::vector<double> unit = residual[best];
    for (double& v : unit) v /= best_norm;
    for (size_t k = 0; k < s.keys.size(); ++k) {
      if (taken[k]) continue;
      double dot = 0;
      for (size_t i = 0; i < n; ++i) dot += residual[k][i] * unit[i];
      for (size_t i = 0; i < n; ++i) residual[k][i] -= dot * unit[i];
    }
  }
  return order;
}

// The fold of each run: leave-one-out up to max_leave_one_out runs, else interleaved folds.
std::vector<int> FoldsOf(size_t n, const LayerFitOptions& options, int* count) {
  std::vector<int> fold(n);
  const bool loo = static_cast<int>(n) <= options.max_leave_one_out;
  *count = loo ? static_cast<int>(n) : options.folds;
  for (size_t i = 0; i < n; ++i) fold[i] = static_cast<int>(i % static_cast<size_t>(*count));
  return fold;
}

double AbsError(double log_residual) { return std::fabs(std::exp(log_residual) - 1); }

// Step 3: the held-out MAPE of the linearised posterior of the level and the first candidates
// `subset` (pulls: lambda[0] the level's, lambda[1 + p] subset[p]'s).
double LinearHeldOutMape(const Sensitivity& s, const std::vector<int>& subset,
                         const std::vector<double>& lambda, const std::vector<int>& fold,
                         int folds) {
  const size_t n = s.r0.size(), k = subset.size() + 1;
  auto column = [&](size_t p, size_t i) { return p == 0 ? 1.0 : s.j[subset[p - 1]][i]; };
  double sum = 0;
  for (int f = 0; f < folds; ++f) {
    std::vector<std::vector<double>> a(k, std::vector<double>(k, 0.0));
    std::vector<double> b(k, 0.0);
    for (size_t i = 0; i < n; ++i) {
      if (fold[i] == f) continue;
      for (size_t p = 0; p < k; ++p) {
        b[p] -= column(p, i) * s.r0[i];
        for (size_t q = 0; q < k; ++q) a[p][q] += column(p, i) * column(q, i);
      }
    }
    for (size_t p = 0; p < k; ++p) a[p][p] += lambda[p];
    const std::vector<double> delta = Solve(a, b);
    for (size_t i = 0; i < n; ++i) {
      if (fold[i] != f) continue;
      double r = s.r0[i];
      for (size_t p = 0; p < k; ++p) r += column(p, i) * delta[p];
      sum += AbsError(r);
    }
  }
  return sum / static_cast<double>(n);
}

// `start` with the parameters `keys` fitted to `rows` (layouts as planned), each pulled
// toward start's value with its weight.
Profile FitSubset(const std::vector<Prepared>& rows, const Catalog& catalog, const Profile& start,
                  const std::vector<std::string>& families, const std::vector<std::string>& keys,
                  const std::vector<double>& weights, int max_iterations) {
  Profile profile = start;
  std::vector<ParamRef> params;
  std::vector<double> w;
  for (ParamRef& ref : FittableParams(&profile, families)) {
    auto it = std::find(keys.begin(), keys.end(), ref.key);
    if (it == keys.end()) continue;
    ref.prior = *ref.value;
    params.push_back(ref);
    w.push_back(weights[it - keys.begin()]);
  }
  Problem pb{&rows, &catalog, &profile, params, 0, w, false};
  Optimise(pb, max_iterations);
  return profile;
}

// The posterior of a stack's run scatter sigma^2 given the sample variance `var` of its `n` runs,
// under the prior's scaled inverse chi-square (nu0, sigma0^2): scaled inverse chi-square with
// nu0 + n - 1 degrees of freedom and this scale.
double PosteriorScatter2(double n, double var, const LayerPriors& priors) {
  const double nu0 = priors.scatter_dof, s02 = priors.run_scatter * priors.run_scatter;
  return (nu0 * s02 + (n - 1) * var) / (nu0 + n - 1);
}

// The per-run scatter sigma^2 the level's shrinkage uses for runs with log ratios `x` (step 1 of
// FitLayer): their own when they agree, else the posterior of the prior's scaled inverse
// chi-square given their sample variance. `agree` and `spread` (the sample standard deviation)
// say which.
double RunScatter2(const std::vector<double>& x, const LayerPriors& priors, double noise,
                   bool* agree = nullptr, double* spread = nullptr) {
  const double n = static_cast<double>(x.size());
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= n;
  for (double v : x) var += (v - mean) * (v - mean);
  var = x.size() > 1 ? var / (n - 1) : 0;
  const bool agreed = x.size() >= 2 && std::sqrt(var) <= 0.5 * priors.run_scatter;
  if (agree != nullptr) *agree = agreed;
  if (spread != nullptr) *spread = std::sqrt(var);
  if (agreed) return std::max({var, noise * noise, 1e-8});  // 1e-8: never a zero weight
  return PosteriorScatter2(n, var, priors);
}

}  // namespace

// Boost.Math's Student's t (libboost-dev, already a dependency for Boost.Asio): any positive
// degrees of freedom, whole or not.
double StudentTCdf(double t, double dof) {
  return boost::math::cdf(boost::math::students_t_distribution<double>(dof), t);
}

double StudentTQuantile(double p, double dof) {
  if (!(p > 0 && p < 1) || !(dof > 0)) return std::numeric_limits<double>::quiet_NaN();
  return boost::math::quantile(boost::math::students_t_distribution<double>(dof), p);
}

namespace {

// The non-linear fit of `keys` held out fold by fold. `weights` were set for the scatter
// `sigma2` of all the runs; each fold's are rescaled to the scatter of its own training runs
// (RunScatter2 on their log ratios `r0`), as a fit on those runs alone would set them.
absl::StatusOr<ErrorStats> HeldOut(const std::vector<Prepared>& rows, const Catalog& catalog,
                                   const Profile& start, const std::vector<std::string>& families,
                                   const std::vector<std::string>& keys,
                                   const std::vector<double>& weights, double sigma2,
                                   const std::vector<double>& r0, const LayerPriors& priors,
                                   const LayerFitOptions& options, std::vector<double>* per_run) {
  int folds = 0;
  const std::vector<int> fold = FoldsOf(rows.size(), options, &folds);
  std::vector<double> errors;
  per_run->assign(rows.size(), 0.0);
  for (int f = 0; f < folds; ++f) {
    if (options.stop && options.stop()) return absl::CancelledError("calibration stopped");
    std::vector<Prepared> train, test;
    std::vector<double> x;
    for (size_t i = 0; i < rows.size(); ++i) {
      (fold[i] == f ? test : train).push_back(rows[i]);
      if (fold[i] != f) x.push_back(-r0[i]);
    }
    std::vector<double> w = weights;
    const double scale = RunScatter2(x, priors, options.noise) / sigma2;
    for (double& v : w) v *= scale;
    const Profile fitted =
        FitSubset(train, catalog, start, families, keys, w, options.max_iterations);
    for (size_t i = 0; i < rows.size(); ++i) {
      if (fold[i] != f) continue;
      const Prepared& p = rows[i];
      (*per_run)[i] = std::fabs(PredictRow(p, catalog, fitted) / p.run->tokens_per_s_per_gpu - 1);
      errors.push_back((*per_run)[i]);
    }
  }
  return Summarise(errors);
}

std::string Percent(double fraction) { return absl::StrFormat("%.1f %%", 100 * fraction); }

std::string Evidence(const std::vector<Measurement>& runs, const std::string& given) {
  std::string out = given;
  if (out.empty()) {
    std::vector<std::string> ids;
    for (size_t i = 0; i < runs.size() && i < 8; ++i) {
      ids.push_back(runs[i].id.empty() ? absl::StrCat("run ", i + 1) : runs[i].id);
    }
    out =
        absl::StrCat(runs.size(), runs.size() == 1 ? " run: " : " runs: ", absl::StrJoin(ids, ", "),
                     runs.size() > 8 ? absl::StrCat(" (+", runs.size() - 8, " more)") : "");
  }
  for (char& c : out) {
    if (c == '#' || c == '\n' || c == '\r') c = ' ';
  }
  return std::string(absl::StripAsciiWhitespace(out));
}

constexpr char kLevelKey[] = "stack.efficiency";

}  // namespace

namespace {

// The parameters a layer moves, the level first, each with its pull toward `start` (weight) and
// the runs it informs.
struct LayerKeys {
  std::vector<std::string> keys;
  std::vector<double> weights;
  std::vector<int> informs;

  size_t further() const { return keys.size() - 1; }
  void Add(const std::string& key, double weight, int runs) {
    keys.push_back(key);
    weights.push_back(weight);
    informs.push_back(runs);
  }
  void KeepLevelOnly() {
    keys.resize(1);
    weights.resize(1);
    informs.resize(1);
  }
};

// Step 1: the scatter the level's shrinkage uses, and what the runs show, in words.
struct LevelEstimate {
  double sigma2 = 0;
  std::string text;      // the runs' level and how much of it is taken
  std::string interval;  // the level's posterior interval
};

// Steps 2 and 3: the further candidates in order, the pulls (lambda[0] the level's, then each
// candidate's), how many join the level, and why the others were left out (appended to the
// reason).
struct Further {
  std::vector<int> order;
  std::vector<double> lambda;
  size_t chosen = 0;
  std::string note;
};

// Step 5's held-out verdict on a set of parameters.
struct HeldOutCheck {
  ErrorStats held;
  bool gains = false;
  std::string worse_run;  // with two runs: the run the start predicts better, in words
};

// FitLayer, step by step (model/calibration.h): the usable runs and their sensitivities are
// measured once; each step returns what it decided, and a declined layer returns `out_` as the
// step that declined it left it.
class LayerFitter {
 public:
  LayerFitter(const std::vector<Measurement>& runs, const Catalog& catalog, const Profile& start,
              const LayerFitOptions& options)
      : runs_(runs), catalog_(catalog), start_(start), options_(options) {}

  absl::StatusOr<LayerFit> Fit() {
    out_.profile = start_;
    out_.before = Validate(runs_, catalog_, start_);
    out_.after = out_.before;
    RETURN_IF_ERROR(PrepareRows());
    const LevelEstimate level = EstimateLevel();
    if (out_.held_out_before.mape <= options_.noise) return WithinNoise();
    Further further = ChooseFurther(level.sigma2);
    if (Stopped()) return absl::CancelledError("calibration stopped");
    if (further.chosen == 0 && !out_.level_shown) return NotShown(level, further.note);
    LayerKeys keys = KeysOf(further);
    const Profile level_only = FitKeys({kLevelKey}, {further.lambda[0]});
    Profile fitted = keys.further() > 0 ? FitKeys(keys.keys, keys.weights) : level_only;
    if (!options_.others.empty()) {
      out_.others_before = Validate(options_.others, catalog_, start_).overall;
      out_.others_after = Validate(options_.others, catalog_, level_only).overall;
      if (keys.further() > 0) {
        ASSIGN_OR_RETURN(fitted, KeepWhatOtherRunsAllow(level_only, &keys, &further.note));
        if (keys.further() == 0 && !out_.level_shown) return NotShown(level, further.note);
      }
    }
    if (rows_.size() >= 2) {
      ASSIGN_OR_RETURN(HeldOutCheck check,
                       CheckHeldOut(level.sigma2, level_only, &keys, &fitted, &further.note));
      if (!check.gains && keys.further() > 0) return NotShown(level, further.note);
      if (!check.gains) return HeldOutNoBetter(level, further.note, check);
      out_.held_out_after = check.held;
      out_.validated = true;
    }
    if (!options_.others.empty() &&
        out_.others_after.mape > out_.others_before.mape + options_.others_tolerance) {
      return OtherRunsWorse(level, further.note);
    }
    return Finish(level, keys, fitted, further.note);
  }

 private:
  bool Stopped() const { return options_.stop && options_.stop(); }
  double Margin() const {
    return options_.min_gain * std::sqrt(2.0 / static_cast<double>(rows_.size()));
  }
  // `start` with `keys` fitted to the usable runs, each pulled toward its start with its weight.
  Profile FitKeys(const std::vector<std::string>& keys, const std::vector<double>& weights) const {
    return FitSubset(rows_, catalog_, start_, families_, keys, weights, options_.max_iterations);
  }

  // The usable runs, their layouts planned once with `start`; their families, the prior, and
  // their sensitivities and errors under `start`.
  absl::Status PrepareRows() {
    std::vector<Prepared> all = Prepare(Pointers(runs_), catalog_);
    PlanLayouts(&all, catalog_, start_);
    for (Prepared& p : all) {
      if (p.failure.empty() && PredictRow(p, catalog_, start_) > 0) rows_.push_back(std::move(p));
    }
    if (rows_.empty()) {
      return absl::FailedPreconditionError("no run could be predicted, so none can calibrate");
    }
    std::set<std::string> family_set;
    for (const Prepared& p : rows_) {
      family_set.insert(catalog_.FindAccelerator(p.scenario.cluster.accelerator)->family);
    }
    families_.assign(family_set.begin(), family_set.end());
    const size_t n = rows_.size();
    runs_text_ = absl::StrCat(n, n == 1 ? " run" : " runs");
    const LayerPriors& given = options_.priors;
    out_.priors = given.level_spread > 0 && given.run_scatter > 0 && given.scatter_dof > 0
                      ? given
                      : LayerPriorsOf(start_);
    tau2_ = out_.priors.level_spread * out_.priors.level_spread;
    s_ = MeasureSensitivity(rows_, catalog_, start_, families_, options_.min_sensitivity);
    for (double r : s_.r0) start_errors_.push_back(AbsError(r));
    out_.held_out_before = Summarise(start_errors_);
    return absl::OkStatus();
  }

  // Step 1: the level and how much of it to take. Runs that agree (their spread at most half
  // the model's run scatter) are taken at their own scatter, floored at the noise level;
  // otherwise the posterior of the prior's scatter given theirs. Whether the runs show a level
  // at all: the posterior of the stack's log level under the prior's scatter (agreement of a
  // few runs says little about the scatter of the stack's next run), Student-t, must have its
  // central `credibility` interval clear of 1.
  LevelEstimate EstimateLevel() {
    const size_t n = rows_.size();
    const double nd = static_cast<double>(n);
    double mean = 0;
    std::vector<double> x;  // log(measured / predicted) per run
    for (double r : s_.r0) x.push_back(-r);
    for (double v : x) mean += v;
    mean /= nd;
    bool agree = false;
    double spread = 0;
    LevelEstimate e;
    e.sigma2 = RunScatter2(x, out_.priors, options_.noise, &agree, &spread);
    out_.level = std::exp(mean);
    out_.shrink = nd * tau2_ / (nd * tau2_ + e.sigma2);
    const double post2 = PosteriorScatter2(nd, spread * spread, out_.priors);
    const double b = nd * tau2_ / (nd * tau2_ + post2);
    out_.level_dof = out_.priors.scatter_dof + nd - 1;
    out_.level_location = b * mean;
    out_.level_scale = std::sqrt(b * post2 / nd);
    out_.level_t_needed = StudentTQuantile(0.5 + options_.credibility / 2, out_.level_dof);
    out_.level_shown = std::fabs(out_.level_location) > out_.level_t_needed * out_.level_scale;
    e.text = absl::StrFormat(
        "the %s ran at %.3fx the starting profile's prediction (geometric mean%s); prior level "
        "spread %.3f, run scatter %.3f (log): the shrinkage keeps %.0f %% of it",
        runs_text_, out_.level,
        n > 1 ? absl::StrFormat(", spread %.3f in log: %s", spread,
                                agree ? "they agree" : "they disagree")
              : "",
        out_.priors.level_spread, out_.priors.run_scatter, 100 * out_.shrink);
    e.interval = absl::StrFormat(
        "the level's %.0f %% posterior interval under the prior's run scatter is %.3fx-%.3fx "
        "(Student-t, %.2f degrees of freedom)",
        100 * options_.credibility,
        std::exp(out_.level_location - out_.level_t_needed * out_.level_scale),
        std::exp(out_.level_location + out_.level_t_needed * out_.level_scale), out_.level_dof);
    return e;
  }

  // Steps 2 and 3: further candidates along the directions the runs vary in, and how many of
  // them join the level (more than none only when the linearised held-out MAPE beats the level
  // alone's by the margin).
  Further ChooseFurther(double sigma2) {
    const size_t n = rows_.size();
    int folds = 0;
    const std::vector<int> fold = FoldsOf(n, options_, &folds);
    if (n >= 2) {
      out_.held_out_method =
          folds == static_cast<int>(n) ? "leave-one-out" : absl::StrCat(folds, "-fold");
    }
    Further f;
    if (n >= 3) {
      f.order = OrderCandidates(Centred(s_, options_.min_sensitivity), options_,
                                std::max(1, static_cast<int>(n - 1) / 2));
    }
    for (int k : f.order) out_.considered.push_back(s_.keys[k]);
    f.lambda = {sigma2 / tau2_};
    for (int k : f.order) {
      const double sk = std::max(s_.rms[k], options_.min_sensitivity);
      f.lambda.push_back(sigma2 * sk * sk / tau2_);
    }
    if (f.order.empty()) return f;
    const double level_only = LinearHeldOutMape(s_, {}, f.lambda, fold, folds);
    double best = level_only;
    for (size_t k = 1; k <= f.order.size(); ++k) {
      const std::vector<int> subset(f.order.begin(), f.order.begin() + k);
      const double mape = LinearHeldOutMape(s_, subset, f.lambda, fold, folds);
      if (mape < best) {
        best = mape;
        f.chosen = k;
      }
    }
    const double margin = Margin();
    if (f.chosen > 0 && !(best < level_only - margin)) {
      f.note = absl::StrCat("; ", s_.keys[f.order[0]], (f.order.size() > 1 ? " and others" : ""),
                            " would not beat the level alone out of sample by ", Percent(margin),
                            " (", Percent(best), " against ", Percent(level_only), ")");
      f.chosen = 0;
    }
    return f;
  }

  // The level and the chosen candidates, with their pulls and the runs each informs.
  LayerKeys KeysOf(const Further& f) const {
    LayerKeys k;
    k.Add(kLevelKey, f.lambda[0], static_cast<int>(rows_.size()));
    for (size_t i = 0; i < f.chosen; ++i) {
      k.Add(s_.keys[f.order[i]], f.lambda[1 + i], s_.informs[f.order[i]]);
    }
    return k;
  }

  // Step 4: the user's other runs of these stacks, each further parameter checked on its own
  // before it is taken: it joins only when it does not raise the MAPE there over the level and
  // the parameters taken before it. Leaves the kept ones in `keys` and returns their fit.
  absl::StatusOr<Profile> KeepWhatOtherRunsAllow(const Profile& level_only, LayerKeys* keys,
                                                 std::string* note) {
    LayerKeys kept;
    kept.Add(keys->keys[0], keys->weights[0], keys->informs[0]);
    std::vector<std::string> dropped;
    Profile current = level_only;
    for (size_t k = 1; k < keys->keys.size(); ++k) {
      if (Stopped()) return absl::CancelledError("calibration stopped");
      std::vector<std::string> trial_keys = kept.keys;
      std::vector<double> trial_weights = kept.weights;
      trial_keys.push_back(keys->keys[k]);
      trial_weights.push_back(keys->weights[k]);
      Profile trial = FitKeys(trial_keys, trial_weights);
      const ErrorStats e = Validate(options_.others, catalog_, trial).overall;
      if (e.mape > out_.others_after.mape) {
        dropped.push_back(absl::StrFormat("%s (%s -> %s)", keys->keys[k],
                                          Percent(out_.others_after.mape), Percent(e.mape)));
        continue;
      }
      kept.Add(keys->keys[k], keys->weights[k], keys->informs[k]);
      current = std::move(trial);
      out_.others_after = e;
    }
    if (!dropped.empty()) {
      absl::StrAppend(note, "; left out, as each would raise the MAPE on the ",
                      out_.others_after.count,
                      " other stored runs: ", absl::StrJoin(dropped, ", "));
    }
    *keys = std::move(kept);
    return current;
  }

  // The non-linear fit of `keys` held out fold by fold, and whether it gains on the start: the
  // MAPE by the margin and, with two runs (whose mean one run much improved can carry alone),
  // each run predicted better than the start predicts it.
  absl::StatusOr<HeldOutCheck> HeldOutOf(const LayerKeys& keys, double sigma2) const {
    std::vector<double> per_run;
    HeldOutCheck c;
    ASSIGN_OR_RETURN(c.held, HeldOut(rows_, catalog_, start_, families_, keys.keys, keys.weights,
                                     sigma2, s_.r0, out_.priors, options_, &per_run));
    c.gains = c.held.mape < out_.held_out_before.mape - Margin();
    for (size_t i = 0; c.gains && rows_.size() == 2 && i < 2; ++i) {
      if (per_run[i] >= start_errors_[i]) {
        c.worse_run = absl::StrFormat("run %d alone predicts run %d at %s off, the start at %s",
                                      2 - static_cast<int>(i), 1 + static_cast<int>(i),
                                      Percent(per_run[i]), Percent(start_errors_[i]));
        c.gains = false;
      }
    }
    return c;
  }

  // Step 5: the layer must predict each run, fitted without it, better than the start does.
  // Further parameters that do not are dropped and the level alone is tried (the caller
  // declines when the level was not shown: `keys` still holds them then).
  absl::StatusOr<HeldOutCheck> CheckHeldOut(double sigma2, const Profile& level_only,
                                            LayerKeys* keys, Profile* fitted, std::string* note) {
    ASSIGN_OR_RETURN(HeldOutCheck check, HeldOutOf(*keys, sigma2));
    if (keys->further() == 0 || check.gains) return check;
    absl::StrAppend(note, "; ", absl::StrJoin(keys->keys.begin() + 1, keys->keys.end(), ", "),
                    " left out: ", out_.held_out_method, " MAPE with them ",
                    Percent(check.held.mape));
    if (!out_.level_shown) return check;
    keys->KeepLevelOnly();
    ASSIGN_OR_RETURN(check, HeldOutOf(*keys, sigma2));
    *fitted = level_only;
    if (!options_.others.empty()) {
      out_.others_after = Validate(options_.others, catalog_, level_only).overall;
    }
    return check;
  }

  // The declines, each with the rule that declined it (LayerFit::declined).
  LayerFit WithinNoise() {
    out_.reason = absl::StrCat("the starting profile already predicts these ", runs_text_,
                               " within ", Percent(options_.noise), " (MAPE ",
                               Percent(out_.held_out_before.mape), "): nothing to fit");
    out_.declined = "within noise";
    return out_;
  }
  LayerFit NotShown(const LevelEstimate& level, const std::string& further) {
    out_.reason = absl::StrCat("declined: ", level.text, further, "; but ", level.interval,
                               ", which holds 1: these runs do not show the stack's level");
    out_.declined = "level not shown";
    if (!options_.others.empty() && out_.others_before.count == 0) {
      out_.others_before = Validate(options_.others, catalog_, start_).overall;
    }
    out_.others_after = out_.others_before;
    out_.held_out_after = out_.held_out_before;
    out_.validated = false;
    return out_;
  }
  LayerFit HeldOutNoBetter(const LevelEstimate& level, const std::string& further,
                           const HeldOutCheck& check) {
    out_.reason = absl::StrCat(
        "declined: ", level.text, further, "; but fitted without each run in turn the ",
        "layer predicts that run no better than the start (", out_.held_out_method, " MAPE ",
        Percent(out_.held_out_before.mape), " -> ", Percent(check.held.mape),
        check.worse_run.empty() ? absl::StrCat(", a gain under ", Percent(Margin()))
                                : absl::StrCat(", but ", check.worse_run),
        "): the runs do not share an offset");
    out_.declined = "held out no better";
    out_.others_after = out_.others_before;
    return out_;
  }
  // Step 6: the user's other runs, the layer as a whole.
  LayerFit OtherRunsWorse(const LevelEstimate& level, const std::string& further) {
    out_.reason = absl::StrCat(
        "declined: ", level.text, further, "; but the layer would raise the MAPE on the ",
        out_.others_after.count, " other stored runs of these stacks from ",
        Percent(out_.others_before.mape), " to ", Percent(out_.others_after.mape), " (more than ",
        Percent(options_.others_tolerance), ")");
    out_.declined = "other runs";
    out_.others_after = out_.others_before;
    out_.held_out_after = out_.held_out_before;
    out_.validated = false;
    return out_;
  }

  // The changes: what moved (by 0.1 % or more), from what, with the runs each informs; a layer
  // that moves nothing is declined.
  absl::StatusOr<LayerFit> Finish(const LevelEstimate& level, const LayerKeys& keys,
                                  const Profile& fitted, const std::string& further) {
    const std::string evidence = Evidence(runs_, options_.evidence);
    for (size_t k = 0; k < keys.keys.size(); ++k) {
      const std::string& key = keys.keys[k];
      ASSIGN_OR_RETURN(const double old_value, ParameterValue(start_, key));
      ASSIGN_OR_RETURN(const double new_value, ParameterValue(fitted, key));
      if (std::fabs(std::log(new_value / old_value)) < 1e-3) continue;
      out_.changes.push_back(ParameterChange{key, old_value, new_value, keys.informs[k], evidence});
    }
    if (out_.changes.empty()) {
      out_.reason =
          absl::StrCat("declined: ", level.text, "; that moves no parameter by 0.1 %", further);
      out_.held_out_after = out_.held_out_before;
      out_.declined = "moves nothing";
      return out_;
    }
    std::sort(out_.changes.begin(), out_.changes.end(),
              [](const ParameterChange& a, const ParameterChange& b) { return a.key < b.key; });
    Profile resolved = start_;
    for (const ParameterChange& c : out_.changes) {
      RETURN_IF_ERROR(SetParameter(&resolved, c.key, c.new_value));
    }
    out_.accepted = true;
    out_.profile = std::move(resolved);
    out_.after = Validate(runs_, catalog_, out_.profile);
    std::vector<std::string> moved;
    for (const ParameterChange& c : out_.changes) {
      moved.push_back(absl::StrFormat("%s %.3g -> %.3g", c.key, c.old_value, c.new_value));
    }
    out_.reason = absl::StrCat(level.text, "; ", level.interval,
                               out_.level_shown ? ", clear of 1"
                                                : ", which holds 1 (the further parameters, each "
                                                  "tested out of sample, carry the layer)",
                               further, ": moved ", absl::StrJoin(moved, ", "));
    if (rows_.size() == 1) {
      absl::StrAppend(&out_.reason, "; not validated (a held-out check needs two runs or more)");
    } else {
      absl::StrAppend(&out_.reason, "; ", out_.held_out_method, " MAPE on the ", runs_text_, " ",
                      Percent(out_.held_out_before.mape), " -> ",
                      Percent(out_.held_out_after.mape));
    }
    return out_;
  }

  const std::vector<Measurement>& runs_;
  const Catalog& catalog_;
  const Profile& start_;
  const LayerFitOptions& options_;
  std::vector<Prepared> rows_;         // the runs the start predicts, layouts planned
  std::vector<std::string> families_;  // their accelerators' families
  std::string runs_text_;              // "N runs"
  double tau2_ = 0;                    // the prior's level spread, squared
  Sensitivity s_;
  std::vector<double> start_errors_;  // each run's error under the start
  LayerFit out_;
};

}  // namespace

absl::StatusOr<LayerFit> FitLayer(const std::vector<Measurement>& runs, const Catalog& catalog,
                                  const Profile& start, const LayerFitOptions& options) {
  return LayerFitter(runs, catalog, start, options).Fit();
}

}  // namespace scalecast
