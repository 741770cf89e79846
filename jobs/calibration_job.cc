#include "jobs/calibration_job.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <deque>
#include <iterator>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "jobs/validation.h"
#include "model/predictor.h"
#include "model/status_macros.h"

namespace scalecast {
namespace {

// The starting profile: its name ("default" for the built-in) and its resolution.
struct CalibrationStart {
  std::string base;
  std::shared_ptr<const Profile> profile;
};

// The start of a layer named `name`: start_from resolved through its own bases, refused when
// that chain passes through `name` (a cycle) or is already kMaxProfileDepth layers deep.
absl::StatusOr<CalibrationStart> StartOfLayer(Store* store,
                                              const std::shared_ptr<const Profile>& builtin,
                                              const std::string& name,
                                              const std::string& start_from) {
  CalibrationStart out;
  out.base = start_from.empty() ? "default" : start_from;
  out.profile = builtin;
  if (out.base == "default") return out;
  // Fresh from the store (not a cache): the chain decides whether the layer may go on it.
  absl::StatusOr<StoredProfile> top = store->GetProfile(out.base);
  if (!top.ok()) {
    if (top.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(
          absl::StrCat("start_from: unknown calibration profile '", out.base, "'"));
    }
    return top.status();
  }
  std::vector<std::string> chain;
  absl::StatusOr<Profile> resolved = ResolveLayers(
      top->profile, *builtin,
      [store](const std::string& n) -> absl::StatusOr<Profile> {
        absl::StatusOr<StoredProfile> p = store->GetProfile(n);
        if (!p.ok()) return p.status();
        return p->profile;
      },
      &chain);
  if (!resolved.ok()) {
    return absl::Status(resolved.status().code(),
                        absl::StrCat("start_from: ", resolved.status().message()));
  }
  if (std::find(chain.begin(), chain.end(), name) != chain.end()) {
    return absl::InvalidArgumentError(absl::StrCat("start_from: '", out.base, "' layers on '", name,
                                                   "' (", absl::StrJoin(chain, " -> "),
                                                   "); a profile cannot layer on itself"));
  }
  // chain: the layers walked, then the full profile at the bottom.
  if (static_cast<int>(chain.size()) - 1 >= kMaxProfileDepth) {
    return absl::FailedPreconditionError(absl::StrCat("start_from: '", out.base, "' is already ",
                                                      chain.size() - 1, " layers deep (at most ",
                                                      kMaxProfileDepth, ")"));
  }
  out.profile = std::make_shared<const Profile>(*std::move(resolved));
  return out;
}

// Runs read per page (the store's largest page).
constexpr int kOtherRunsPage = 1000;

// The stored runs not fitted on: at most `max_runs` of them, evenly spaced in insertion order,
// sampled by the store (Store::SampleMeasurements) so that the cost follows the sample, not the
// store (8 fitted runs with 1M stored took 14 s when every run was read).
absl::StatusOr<std::vector<Measurement>> OtherRuns(Store* store,
                                                   const std::set<std::string>& fitted_ids,
                                                   int64_t max_runs, OtherRunsError* out) {
  max_runs = std::max<int64_t>(1, max_runs);
  const int64_t fitted = static_cast<int64_t>(fitted_ids.size());
  int64_t matching = 0;
  // Room for fitted runs the sample holds (dropped below), up to max_runs of them.
  absl::StatusOr<std::vector<Measurement>> sample =
      store->SampleMeasurements({}, max_runs + std::min(fitted, max_runs), &matching);
  if (!sample.ok()) return sample.status();
  out->stored = std::max<int64_t>(0, matching - fitted);
  std::vector<Measurement> others;
  for (Measurement& m : *sample) {
    if (fitted_ids.count(m.id) != 0 || static_cast<int64_t>(others.size()) >= max_runs) continue;
    others.push_back(std::move(m));
  }
  out->sampled = static_cast<int64_t>(others.size()) < out->stored;
  return others;
}

// Notes a stored run left out because the model cannot evaluate it (once per run).
void Skip(const Measurement& m, absl::string_view why, std::set<std::string>* seen,
          OtherRunsError* out) {
  if (!seen->insert(m.id).second) return;
  ++out->skipped;
  if (out->skipped_named.size() < kMaxSkippedNamed) {
    out->skipped_named.push_back(
        absl::StrCat("stored run '", m.id, "' cannot be evaluated (", why, ")"));
  }
}

// The user's other stored runs of the fitted runs' stacks: the runs of their sources not
// fitted on, at most `limit` (the first of each source in insertion order, sources in turn).
// A run the model cannot read is left out, and named in *out.
constexpr int kSameStackRuns = 200;
constexpr size_t kSameStackSources = 8;
absl::StatusOr<std::vector<Measurement>> SameStackRuns(
    Store* store, const std::vector<Measurement>& fitted, const std::set<std::string>& fitted_ids,
    const Catalog& catalog, const JobControl& control, std::set<std::string>* seen,
    OtherRunsError* skipped) {
  std::set<std::string> sources;
  for (const Measurement& m : fitted) {
    if (sources.size() < kSameStackSources) sources.insert(m.source);
  }
  std::vector<Measurement> out;
  const size_t per_source = kSameStackRuns / std::max<size_t>(1, sources.size());
  for (const std::string& source : sources) {
    MeasurementFilter f;
    f.source = source;
    std::string token;
    size_t kept = 0;
    do {
      if (control.Cancelled()) return absl::CancelledError("calibration stopped");
      std::string next;
      absl::StatusOr<std::vector<Measurement>> page =
          store->ListMeasurements(f, kOtherRunsPage, token, &next);
      if (!page.ok()) return page.status();
      for (Measurement& m : *page) {
        if (fitted_ids.count(m.id) != 0 || kept >= per_source) continue;
        if (absl::Status bad = ValidateMeasurement(m, ""); !bad.ok()) {  // implausible
          Skip(m, bad.message(), seen, skipped);
          continue;
        }
        if (absl::StatusOr<Scenario> read = ResolveScenario(m.scenario, catalog); !read.ok()) {
          Skip(m, read.status().message(), seen, skipped);
          continue;
        }
        out.push_back(std::move(m));
        ++kept;
      }
      token = kept >= per_source ? "" : std::move(next);
    } while (!token.empty());
  }
  return out;
}

// The error of `before` and `after` (null: unchanged) on `sample`; a run that cannot be
// evaluated is left out of both, and named in *out.
absl::Status ErrorOn(const std::vector<Measurement>& sample, const Catalog& catalog,
                     const Profile& before, const Profile* after, const JobControl& control,
                     std::set<std::string>* seen, OtherRunsError* out) {
  if (sample.empty()) return absl::OkStatus();
  const std::function<bool()> stop = [&control] { return control.Cancelled(); };
  std::vector<std::vector<Measurement>> slices_before, slices_after;
  absl::StatusOr<ValidationReport> b =
      ValidateInSlices(sample, catalog, before, stop, &slices_before);
  if (!b.ok()) return b.status();
  for (const ValidationRow& row : b->rows) {
    if (!row.failure.empty()) Skip(*row.measurement, row.failure, seen, out);
  }
  out->before = b->overall;
  out->after = out->before;
  if (after != nullptr) {
    absl::StatusOr<ValidationReport> a =
        ValidateInSlices(sample, catalog, *after, stop, &slices_after);
    if (!a.ok()) return a.status();
    out->after = a->overall;
  }
  return absl::OkStatus();
}

// One line that reads back unchanged from a profile's text (no '#', line breaks, '=' in keys,
// or surrounding blanks).
bool Storable(const std::string& s, bool key) {
  if (s.empty() || s != absl::StripAsciiWhitespace(s)) return false;
  for (char c : s) {
    if (c == '#' || c == '\n' || c == '\r' || (key && (c == '=' || c == ' ' || c == '\t'))) {
      return false;
    }
  }
  return true;
}

constexpr char kFilterPrefix[] = "filter.";

// Keeps `f` in `info` as filter.accelerator, filter.framework, filter.source and
// filter.label.<key>, plus filter.kept = 1; nothing when a part would not read back unchanged.
void KeepFilter(const MeasurementFilter& f, std::map<std::string, std::string, std::less<>>* info) {
  std::map<std::string, std::string> parts;
  if (!f.accelerator.empty()) parts["accelerator"] = f.accelerator;
  if (!f.framework.empty()) parts["framework"] = f.framework;
  if (!f.source.empty()) parts["source"] = f.source;
  for (const auto& [k, v] : f.labels) parts[absl::StrCat("label.", k)] = v;
  for (const auto& [k, v] : parts) {
    if (!Storable(k, true) || !Storable(v, false)) return;
  }
  for (const auto& [k, v] : parts) (*info)[absl::StrCat(kFilterPrefix, k)] = v;
  info->insert_or_assign(absl::StrCat(kFilterPrefix, "kept"), std::string("yes"));
}

}  // namespace

std::optional<MeasurementFilter> StoredFilter(const Profile& profile) {
  if (profile.info.find(absl::StrCat(kFilterPrefix, "kept")) == profile.info.end()) {
    return std::nullopt;
  }
  MeasurementFilter f;
  for (const auto& [k, v] : profile.info) {
    if (!absl::StartsWith(k, kFilterPrefix)) continue;
    const std::string part = k.substr(sizeof(kFilterPrefix) - 1);
    if (part == "accelerator") f.accelerator = v;
    if (part == "framework") f.framework = v;
    if (part == "source") f.source = v;
    if (absl::StartsWith(part, "label.")) f.labels[part.substr(6)] = v;
  }
  return f;
}

absl::StatusOr<ProfileDrift> DriftOf(const StoredProfile& stored, const Profile& resolved,
                                     Store* store, const Catalog& catalog,
                                     const JobControl& control) {
  ProfileDrift out;
  const std::optional<MeasurementFilter> filter = StoredFilter(stored.profile);
  if (!filter.has_value()) return out;
  out.tracked = true;
  std::deque<Measurement> latest;
  std::string token;
  do {
    if (control.Cancelled()) return absl::CancelledError("drift check stopped");
    std::string next;
    absl::StatusOr<std::vector<Measurement>> page =
        store->ListMeasurements(*filter, kOtherRunsPage, token, &next);
    if (!page.ok()) return page.status();
    for (Measurement& m : *page) {
      if (m.recorded_at_unix_ms <= stored.created_at_unix_ms) continue;
      if (!ValidateMeasurement(m, "").ok()) continue;
      latest.push_back(std::move(m));
      if (static_cast<int>(latest.size()) > kMaxDriftRuns) latest.pop_front();
    }
    token = std::move(next);
  } while (!token.empty());
  if (latest.empty()) return out;
  const std::vector<Measurement> runs(std::make_move_iterator(latest.begin()),
                                      std::make_move_iterator(latest.end()));
  std::vector<double> ratios;
  for (const ValidationRow& row : Validate(runs, catalog, resolved).rows) {
    if (row.failure.empty() && row.error > -1 && std::isfinite(row.error)) {
      ratios.push_back(1 / (1 + row.error));
    }
  }
  out.runs = static_cast<int>(ratios.size());
  if (ratios.empty()) return out;
  out.median_ratio = Median(ratios);
  const double low = resolved.band.low_ratio, high = resolved.band.high_ratio;
  out.drifted = out.runs >= kMinDriftRuns && (out.median_ratio < low || out.median_ratio > high);
  if (out.drifted) {
    out.text = absl::StrFormat(
        "drifted: the %d runs of %s stored since it was fitted run at %.2fx its prediction "
        "(median), outside its 80 %% band %.2f-%.2f; calibrate again",
        out.runs, DescribeFilter(*filter), out.median_ratio, low, high);
  }
  return out;
}

absl::Status CheckProfileName(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("name: is required");
  if (name == "default") {
    return absl::InvalidArgumentError("name: 'default' is the built-in profile");
  }
  if (name.size() > 64 || !std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      })) {
    return absl::InvalidArgumentError("name: use 1-64 letters, digits, '-', '_' or '.'");
  }
  return absl::OkStatus();
}

namespace {

// One line, read back unchanged: '#' and line breaks become spaces (model/profile.h's text).
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '#' || c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

absl::Status ProfileExists(const std::string& name) {
  return absl::AlreadyExistsError(
      absl::StrCat("name: profile '", name, "' already exists; set replace to overwrite it"));
}

// The job's names: a valid name, a start that is not the layer itself, and (without replace) a
// name not yet taken.
absl::Status CheckNames(const CalibrationJob& job, Store* store) {
  RETURN_IF_ERROR(CheckProfileName(job.name));
  if (job.start_from.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("start_from: longer than ", kMaxNameBytes, " bytes"));
  }
  if (job.start_from == job.name) {
    return absl::InvalidArgumentError(
        absl::StrCat("start_from: profile '", job.name, "' cannot be a layer over itself"));
  }
  if (job.replace) return absl::OkStatus();
  absl::StatusOr<StoredProfile> existing = store->GetProfile(job.name);
  if (existing.ok()) return ProfileExists(job.name);
  if (existing.status().code() != absl::StatusCode::kNotFound) return existing.status();
  return absl::OkStatus();
}

// The runs the filter matches, counted first: a filter matching nothing, or more than max_runs,
// is refused before any run is read (reading past the limit cost the store's size in time and
// memory). A run stored before the bounds existed (an implausible value, which would turn the
// fit into Inf) or one the model cannot read (an input out of range, from before its bound) is
// refused by name, rather than dropped or failing the fit without a name.
absl::StatusOr<std::vector<Measurement>> RunsToFit(const CalibrationJob& job, Store* store,
                                                   const Catalog& catalog,
                                                   const std::string& filter_text) {
  const absl::Status none = absl::FailedPreconditionError(
      absl::StrCat("filter: no stored runs match (", filter_text, ")"));
  ASSIGN_OR_RETURN(const int64_t matching, store->CountMeasurements(job.filter));
  if (matching == 0) return none;
  if (job.max_runs >= 0 && matching > job.max_runs) {
    return absl::ResourceExhaustedError(absl::StrCat("filter: ", matching,
                                                     " stored runs match, over the limit of ",
                                                     job.max_runs, "; narrow the filter"));
  }
  ASSIGN_OR_RETURN(std::vector<Measurement> runs, store->AllMeasurements(job.filter, job.max_runs));
  if (runs.empty()) return none;
  for (const Measurement& m : runs) {
    if (absl::Status bad = ValidateMeasurement(m, ""); !bad.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("filter: stored run '", m.id, "' has ",
                                                        bad.message(),
                                                        "; delete it (DeleteMeasurement)"));
    }
    if (absl::StatusOr<Scenario> read = ResolveScenario(m.scenario, catalog); !read.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("filter: stored run '", m.id, "' cannot be evaluated (",
                       read.status().message(), "); delete it (DeleteMeasurement)"));
    }
  }
  return runs;
}

// The layer as stored: the start's name and the changes, nothing else (model/profile.h); a
// declined fit stores the start, unchanged, under the name (a layer without changes) with the
// reason, so that a Predict with the name works and says what it is.
StoredProfile StoredLayer(const CalibrationJob& job, const CalibrationStart& start,
                          const LayerFit& fit, const std::string& filter_text,
                          int64_t read_at_unix_ms) {
  StoredProfile stored;
  stored.profile.name = job.name;
  stored.profile.base = start.base;
  stored.profile.changes = fit.changes;
  stored.profile.description =
      OneLine(absl::StrCat("layer over '", start.base, "' fitted by Calibrate on ", filter_text));
  KeepFilter(job.filter, &stored.profile.info);  // for the drift check (DriftOf)
  stored.fitted_on = filter_text;
  stored.fitted_count = fit.after.overall.count;
  stored.mape_before = fit.before.overall.mape;
  stored.mape_after = fit.after.overall.mape;
  stored.cv_mape = fit.validated ? fit.held_out_after.mape : 0;
  // Dated when the fit read its runs, not when it finished: the drift check (DriftOf) counts the
  // runs recorded after this, and a run recorded while the fit ran was not in it. (Dated at the
  // end, a run recorded in the same millisecond as the profile was stored fell outside both.)
  stored.created_at_unix_ms = read_at_unix_ms;
  if (!fit.accepted) stored.profile.info[kDeclinedReasonKey] = OneLine(fit.reason);
  return stored;
}

}  // namespace

absl::StatusOr<CalibrationJobResult> RunCalibration(const CalibrationJob& job, Store* store,
                                                    const Catalog& catalog,
                                                    const std::shared_ptr<const Profile>& builtin,
                                                    const JobControl& control) {
  // The store's long reads (the count, the runs, the other runs' pages) stop in the database
  // when the caller does, not only between them.
  ReadInterrupt interrupt([&control] { return control.Cancelled(); });
  const absl::Status stopped = absl::CancelledError("calibration stopped");
  RETURN_IF_ERROR(CheckNames(job, store));
  const std::string filter_text = DescribeFilter(job.filter);
  ASSIGN_OR_RETURN(const CalibrationStart start,
                   StartOfLayer(store, builtin, job.name, job.start_from));
  const int64_t read_at_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count();
  ASSIGN_OR_RETURN(std::vector<Measurement> runs, RunsToFit(job, store, catalog, filter_text));
  // The few-shot rule (model/calibration.h FitLayer): only what these runs can carry moves, and
  // only when it beats the starting profile out of sample.
  LayerFitOptions options;
  options.evidence =
      absl::StrCat(runs.size(), runs.size() == 1 ? " run" : " runs", " (", filter_text, ")");
  options.stop = [&control] { return control.Cancelled(); };
  std::set<std::string> fitted_ids;
  for (const Measurement& m : runs) fitted_ids.insert(m.id);
  CalibrationJobResult out;
  std::set<std::string> skipped_ids;
  ASSIGN_OR_RETURN(options.others, SameStackRuns(store, runs, fitted_ids, catalog, control,
                                                 &skipped_ids, &out.others));
  ASSIGN_OR_RETURN(out.fit, FitLayer(runs, catalog, *start.profile, options));
  if (control.Cancelled()) return stopped;
  ASSIGN_OR_RETURN(const std::vector<Measurement> others,
                   OtherRuns(store, fitted_ids, job.max_other_runs, &out.others));
  RETURN_IF_ERROR(ErrorOn(others, catalog, *start.profile,
                          out.fit.accepted ? &out.fit.profile : nullptr, control, &skipped_ids,
                          &out.others));
  out.stored = StoredLayer(job, start, out.fit, filter_text, read_at_unix_ms);
  if (control.Cancelled()) return stopped;
  // Without replace the store inserts only if the name is still free: a profile created since
  // the check above (another caller, another replica) is kept, never overwritten.
  if (absl::Status s = store->PutProfile(out.stored, job.replace); !s.ok()) {
    return s.code() == absl::StatusCode::kAlreadyExists ? ProfileExists(job.name) : s;
  }
  out.written = true;
  out.runs = std::move(runs);  // moves the buffer: the report rows' pointers stay valid
  return out;
}

}  // namespace scalecast
