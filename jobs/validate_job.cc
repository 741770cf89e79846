#include "jobs/validate_job.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "jobs/validation.h"
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

}  // namespace

absl::StatusOr<ValidateJobResult> RunValidateJob(const RunSource& source, const Catalog& catalog,
                                                 const Profile& profile,
                                                 const ValidateJobOptions& options,
                                                 const std::string& described,
                                                 const JobControl& control) {
  absl::StatusOr<int64_t> count = source.count();
  if (!count.ok()) return count.status();
  if (*count == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("filter: no stored runs match (", described, ")"));
  }
  auto too_many = [&](int64_t n) {
    return absl::ResourceExhaustedError(absl::StrCat("filter: ", n, " stored runs match, over the ",
                                                     "limit of ", options.max_runs,
                                                     "; narrow the filter"));
  };
  if (*count > options.max_runs) return too_many(*count);
  if (options.keep_rows && *count > options.max_rows) {
    return absl::ResourceExhaustedError(
        absl::StrCat("include_rows: ", *count, " stored runs match, over the limit of ",
                     options.max_rows, " rows returned; narrow the filter or leave it off"));
  }

  ValidateJobResult out;
  ValidationReport& r = out.report;
  std::vector<double> all;
  Groups by_fw(&out.untracked_groups), by_acc(&out.untracked_groups),
      by_source(&out.untracked_groups), by_label(&out.untracked_groups);
  std::map<std::pair<std::string, std::string>, std::pair<double, int>> pairs;
  int64_t read = 0;
  std::string token;
  do {
    if (control.Cancelled()) return absl::CancelledError("validation stopped");
    std::string next;
    absl::StatusOr<std::vector<Measurement>> page = source.page(token, &next);
    if (!page.ok()) return page.status();
    read += static_cast<int64_t>(page->size());
    if (read > options.max_runs) return too_many(read);  // runs added since the count
    // A page at a time, in slices (jobs/validation.h), the rows folded as they come.
    std::vector<std::vector<Measurement>> slices;
    absl::StatusOr<ValidationReport> part = ValidateInSlices(
        *std::move(page), catalog, profile, [&control] { return control.Cancelled(); }, &slices);
    if (!part.ok()) return part.status();
    for (ValidationRow& row : part->rows) {
      if (!row.failure.empty()) {
        ++r.failed_count;
      } else {
        if (!row.fits) ++r.not_fitting_count;
        const Measurement& m = *row.measurement;
        const double ae = std::fabs(row.error);
        all.push_back(ae);
        by_fw.Add(m.scenario.framework, ae);
        by_acc.Add(m.scenario.cluster.accelerator, ae);
        by_source.Add(m.source, ae);
        for (const auto& [k, v] : m.labels) by_label.Add(absl::StrCat(k, "=", v), ae);
        auto& [sum, n] = pairs[{m.scenario.cluster.accelerator, m.scenario.framework}];
        sum += ae;
        ++n;
      }
      if (options.keep_rows) r.rows.push_back(std::move(row));
    }
    // The kept rows point into the slices; a moved vector keeps its elements where they are.
    if (options.keep_rows) {
      for (auto& slice : slices) out.runs.push_back(std::move(slice));
    }
    token = std::move(next);
  } while (!token.empty());
  r.overall = Summarise(all);
  by_fw.Fill(&r.by_framework);
  by_acc.Fill(&r.by_accelerator);
  by_source.Fill(&r.by_source);
  by_label.Fill(&r.by_label);
  for (const auto& [k, v] : pairs) {
    ErrorStats s;
    s.count = v.second;
    s.mape = v.first / v.second;
    out.by_pair[k] = s;
  }
  return out;
}

}  // namespace scalecast
