#include "jobs/validate_job.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "jobs/validation.h"
#include "model/status_macros.h"
#include "storage/store.h"

namespace scalecast {
namespace {

// |error| of every judged run, per group, in the order read (SummariseRows's order, so that the
// summaries are the ones a report of all runs at once gives).
class Groups {
 public:
  explicit Groups(int64_t* untracked) : untracked_(untracked) {}
  void Add(const std::string& key, double ae) {
    auto it = errors_.find(key);
    if (it == errors_.end()) {
      if (errors_.size() >= kMaxTrackedGroups) {
        if (untracked_keys_.size() < kMaxTrackedGroups && untracked_keys_.insert(key).second) {
          ++*untracked_;
        }
        return;
      }
      it = errors_.emplace(key, std::vector<double>()).first;
    }
    it->second.push_back(ae);
  }
  void Fill(std::map<std::string, ErrorStats>* out) const {
    out->clear();
    for (const auto& [k, v] : errors_) (*out)[k] = Summarise(v);
  }

 private:
  std::map<std::string, std::vector<double>> errors_;
  std::set<std::string> untracked_keys_;
  int64_t* untracked_;
};

// The errors of the rows predicted, folded as the pages come: overall, by framework,
// accelerator, source and label (each bounded: Groups), and by accelerator and framework.
class Tally {
 public:
  explicit Tally(int64_t* untracked)
      : by_fw_(untracked), by_acc_(untracked), by_source_(untracked), by_label_(untracked) {}

  void Add(const ValidationRow& row, ValidationReport* r) {
    if (!row.failure.empty()) {
      ++r->failed_count;
      return;
    }
    if (!row.fits) ++r->not_fitting_count;
    const Measurement& m = *row.measurement;
    const double ae = std::fabs(row.error);
    all_.push_back(ae);
    by_fw_.Add(m.scenario.framework, ae);
    by_acc_.Add(m.scenario.cluster.accelerator, ae);
    by_source_.Add(m.source, ae);
    for (const auto& [k, v] : m.labels) by_label_.Add(absl::StrCat(k, "=", v), ae);
    auto& [sum, n] = pairs_[{m.scenario.cluster.accelerator, m.scenario.framework}];
    sum += ae;
    ++n;
  }

  void Fill(ValidateJobResult* out) const {
    ValidationReport& r = out->report;
    r.overall = Summarise(all_);
    by_fw_.Fill(&r.by_framework);
    by_acc_.Fill(&r.by_accelerator);
    by_source_.Fill(&r.by_source);
    by_label_.Fill(&r.by_label);
    for (const auto& [k, v] : pairs_) {
      ErrorStats s;
      s.count = v.second;
      s.mape = v.first / v.second;
      out->by_pair[k] = s;
    }
  }

 private:
  std::vector<double> all_;
  Groups by_fw_, by_acc_, by_source_, by_label_;
  std::map<std::pair<std::string, std::string>, std::pair<double, int>> pairs_;
};

absl::Status TooManyRuns(int64_t n, const ValidateJobOptions& options) {
  return absl::ResourceExhaustedError(absl::StrCat("filter: ", n, " stored runs match, over the ",
                                                   "limit of ", options.max_runs,
                                                   "; narrow the filter"));
}

// The stored runs the filter matches: at least one, at most max_runs (max_rows with the rows).
absl::Status CheckRunCount(const RunSource& source, const ValidateJobOptions& options,
                           const std::string& described) {
  ASSIGN_OR_RETURN(const int64_t count, source.count());
  if (count == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("filter: no stored runs match (", described, ")"));
  }
  if (count > options.max_runs) return TooManyRuns(count, options);
  if (options.keep_rows && count > options.max_rows) {
    return absl::ResourceExhaustedError(
        absl::StrCat("include_rows: ", count, " stored runs match, over the limit of ",
                     options.max_rows, " rows returned; narrow the filter or leave it off"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ValidateJobResult> RunValidateJob(const RunSource& source, const Catalog& catalog,
                                                 const Profile& profile,
                                                 const ValidateJobOptions& options,
                                                 const std::string& described,
                                                 const JobControl& control) {
  RETURN_IF_ERROR(CheckRunCount(source, options, described));
  ValidateJobResult out;
  Tally tally(&out.untracked_groups);
  int64_t read = 0;
  std::string token;
  do {
    if (control.Cancelled()) return absl::CancelledError("validation stopped");
    std::string next;
    ASSIGN_OR_RETURN(std::vector<Measurement> page, source.page(token, &next));
    read += static_cast<int64_t>(page.size());
    if (read > options.max_runs) return TooManyRuns(read, options);  // runs added since the count
    // A page at a time, in slices (jobs/validation.h), the rows folded as they come.
    std::vector<std::vector<Measurement>> slices;
    ASSIGN_OR_RETURN(ValidationReport part,
                     ValidateInSlices(
                         std::move(page), catalog, profile,
                         [&control] { return control.Cancelled(); }, &slices));
    for (ValidationRow& row : part.rows) {
      tally.Add(row, &out.report);
      if (options.keep_rows) out.report.rows.push_back(std::move(row));
    }
    // The kept rows point into the slices; a moved vector keeps its elements where they are.
    if (options.keep_rows) {
      for (auto& slice : slices) out.runs.push_back(std::move(slice));
    }
    token = std::move(next);
  } while (!token.empty());
  tally.Fill(&out);
  return out;
}

}  // namespace scalecast
