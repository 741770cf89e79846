// What both store backends share, and Store::Open, which picks one.
#include "storage/store.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "model/fnv.h"
#include "model/status_macros.h"
#include "storage/store_internal.h"

namespace scalecast {

bool IsPostgresAddress(absl::string_view address) {
  return absl::StartsWith(address, "postgresql://") || absl::StartsWith(address, "postgres://");
}

absl::StatusOr<std::vector<Measurement>> Store::RecordMeasurements(std::vector<Measurement> batch) {
  if (batch.empty()) return absl::InvalidArgumentError("measurements: the batch is empty");
  size_t next = 0;
  std::vector<Measurement> stored;
  ASSIGN_OR_RETURN(const int64_t given,
                   RecordMeasurementStream(
                       [&](std::vector<Measurement>* chunk) {
                         for (; next < batch.size() && chunk->size() < kRecordChunk; ++next) {
                           chunk->push_back(std::move(batch[next]));
                         }
                         return absl::OkStatus();
                       },
                       [&](Measurement&& m) { stored.push_back(std::move(m)); }));
  (void)given;
  return stored;
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const StoreOptions& options) {
  if (options.path.empty()) return absl::InvalidArgumentError("path: must not be empty");
  if (options.busy_timeout_ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("busy_timeout_ms: must be >= 0, got ", options.busy_timeout_ms));
  }
  if (options.sweep_cache_max_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sweep_cache_max_bytes: must be >= 0, got ", options.sweep_cache_max_bytes));
  }
  if (IsPostgresAddress(options.path)) return store_internal::OpenPostgres(options);
  return store_internal::OpenSqlite(options);
}

namespace {
thread_local ReadInterrupt* current_interrupt = nullptr;
thread_local store_internal::InterruptibleRead* current_read = nullptr;
}  // namespace

ReadInterrupt::ReadInterrupt(std::function<bool()> stop)
    : stop_(std::move(stop)), outer_(current_interrupt) {
  current_interrupt = this;
}

ReadInterrupt::~ReadInterrupt() { current_interrupt = outer_; }

ReadInterrupt* ReadInterrupt::Current() { return current_interrupt; }

namespace store_internal {

InterruptibleRead::InterruptibleRead(std::atomic<int64_t>* counter)
    : scope_(ReadInterrupt::Current()), counter_(counter), outer_(current_read) {
  current_read = this;
}

InterruptibleRead::~InterruptibleRead() { current_read = outer_; }

InterruptibleRead* InterruptibleRead::Current() { return current_read; }

bool InterruptibleRead::Stop() {
  if (!stopped_ && scope_ != nullptr && scope_->ShouldStop()) stopped_ = true;
  return stopped_;
}

absl::Status InterruptibleRead::Interrupted() {
  ++*counter_;
  scope_->CountInterrupted();
  return absl::CancelledError("store read interrupted: the caller gave up");
}

namespace {

constexpr absl::string_view kPageTokenPrefix = "m1.";

// The filter in an unambiguous spelling (each string length-prefixed), for page tokens.
std::string CanonicalFilter(const MeasurementFilter& f) {
  std::string out;
  auto add = [&out](absl::string_view s) { absl::StrAppend(&out, s.size(), ":", s); };
  add(f.accelerator);
  add(f.framework);
  add(f.source);
  for (const auto& [k, v] : f.labels) {
    add(k);
    add(v);
  }
  return out;
}

std::string PageTokenBody(int64_t last_seq) {
  return absl::StrCat(kPageTokenPrefix, last_seq, ".");
}

std::string PageTokenCheck(const MeasurementFilter& filter, absl::string_view body) {
  // 64-bit FNV-1a: a check that a token is ours and belongs to this filter, not a secret.
  const uint64_t check = Fnv1a64(absl::StrCat(CanonicalFilter(filter), "|", body));
  return absl::StrCat(absl::Hex(check, absl::kZeroPad16));
}

}  // namespace

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<int64_t> ForEachChunk(
    const Store::RunSource& next,
    const std::function<absl::Status(std::vector<Measurement> chunk, size_t first)>& record) {
  int64_t given = 0;
  for (;;) {
    std::vector<Measurement> chunk;
    if (absl::Status st = next(&chunk); !st.ok()) return st;
    if (chunk.empty()) break;
    const size_t first = static_cast<size_t>(given);
    given += static_cast<int64_t>(chunk.size());
    if (absl::Status st = record(std::move(chunk), first); !st.ok()) return st;
  }
  if (given == 0) return absl::InvalidArgumentError("measurements: the batch is empty");
  return given;
}

const std::vector<MeasurementColumn>& MeasurementColumns() {
  using M = const Measurement&;
  using T = const std::string&;
  static const auto* columns = new std::vector<MeasurementColumn>{
      {"id", [](M m, T) -> SqlValue { return m.id; }},
      {"scenario", [](M, T text) -> SqlValue { return text; }},
      {"accelerator", [](M m, T) -> SqlValue { return m.scenario.cluster.accelerator; }},
      {"framework", [](M m, T) -> SqlValue { return m.scenario.framework; }},
      {"model", [](M m, T) -> SqlValue { return m.scenario.workload.model.name; }},
      {"num_gpus", [](M m, T) -> SqlValue { return int64_t{m.scenario.cluster.num_gpus}; }},
      {"gpus_per_node",
       [](M m, T) -> SqlValue { return int64_t{m.scenario.cluster.gpus_per_node}; }},
      {"seq_len", [](M m, T) -> SqlValue { return int64_t{m.scenario.workload.seq_len}; }},
      {"global_batch",
       [](M m, T) -> SqlValue { return int64_t{m.scenario.workload.global_batch}; }},
      {"precision",
       [](M m, T) -> SqlValue { return int64_t{static_cast<int>(m.scenario.workload.precision)}; }},
      {"tp", [](M m, T) -> SqlValue { return int64_t{m.scenario.parallelism.tp}; }},
      {"pp", [](M m, T) -> SqlValue { return int64_t{m.scenario.parallelism.pp}; }},
      {"vpp", [](M m, T) -> SqlValue { return int64_t{m.scenario.parallelism.vpp}; }},
      {"cp", [](M m, T) -> SqlValue { return int64_t{m.scenario.parallelism.cp}; }},
      {"dp", [](M m, T) -> SqlValue { return int64_t{m.scenario.parallelism.dp}; }},
      {"sharding",
       [](M m, T) -> SqlValue {
         return int64_t{static_cast<int>(m.scenario.parallelism.sharding)};
       }},
      {"micro_batch",
       [](M m, T) -> SqlValue { return int64_t{m.scenario.parallelism.micro_batch}; }},
      {"recompute",
       [](M m, T) -> SqlValue {
         return int64_t{static_cast<int>(m.scenario.parallelism.recompute)};
       }},
      {"sequence_parallel",
       [](M m, T) -> SqlValue {
         return int64_t{m.scenario.parallelism.sequence_parallel.value_or(false) ? 1 : 0};
       }},
      {"tokens_per_s_per_gpu", [](M m, T) -> SqlValue { return m.tokens_per_s_per_gpu; }},
      {"step_time_s", [](M m, T) -> SqlValue { return m.step_time_s; }},
      {"watts_per_gpu", [](M m, T) -> SqlValue { return m.watts_per_gpu; }},
      {"source", [](M m, T) -> SqlValue { return m.source; }},
      {"recorded_at_unix_ms", [](M m, T) -> SqlValue { return int64_t{m.recorded_at_unix_ms}; }},
  };
  return *columns;
}

std::string MeasurementInsertColumns() {
  std::string out;
  for (const MeasurementColumn& c : MeasurementColumns()) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", c.name);
  }
  return out;
}

std::string NewMeasurementId() {
  // One generator per thread, seeded from the OS (getrandom): processes sharing a database do
  // not draw the same ids.
  thread_local std::mt19937_64 gen([] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }());
  return absl::StrCat("m-", absl::Hex(gen(), absl::kZeroPad16));
}

absl::Status TooNewError(int version, int latest) {
  return absl::FailedPreconditionError(absl::StrCat("database schema version ", version,
                                                    " is newer than this build supports (", latest,
                                                    "); upgrade scalecast"));
}

absl::Status ClosedError() { return absl::FailedPreconditionError("store is closed"); }

absl::StatusOr<int> PageLimit(int page_size) {
  if (page_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("page_size: must be >= 0, got ", page_size));
  }
  return page_size == 0 ? kDefaultPageSize : std::min(page_size, kMaxPageSize);
}

std::string EncodePageToken(const MeasurementFilter& filter, int64_t last_seq) {
  const std::string body = PageTokenBody(last_seq);
  return absl::WebSafeBase64Escape(absl::StrCat(body, PageTokenCheck(filter, body)));
}

absl::StatusOr<int> ProfilePageLimit(int page_size) {
  if (page_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("page_size: must be >= 0, got ", page_size));
  }
  return page_size == 0 ? kMaxPageSize : std::min(page_size, kMaxPageSize);
}

constexpr absl::string_view kProfileTokenPrefix = "p1.";

std::string EncodeProfileToken(const std::string& last_name) {
  return absl::WebSafeBase64Escape(absl::StrCat(kProfileTokenPrefix, last_name));
}

absl::StatusOr<std::string> DecodeProfileToken(const std::string& token) {
  if (token.empty()) return std::string();
  const absl::Status malformed = absl::InvalidArgumentError(
      "page_token: malformed (pass back a next_page_token unchanged, or \"\" for the first page)");
  std::string raw;
  if (token.size() > 512 || !absl::WebSafeBase64Unescape(token, &raw)) return malformed;
  absl::string_view rest = raw;
  if (!absl::ConsumePrefix(&rest, kProfileTokenPrefix) || rest.empty()) return malformed;
  return std::string(rest);
}

absl::StatusOr<int64_t> DecodePageToken(const MeasurementFilter& filter, const std::string& token) {
  if (token.empty()) return 0;
  const absl::Status malformed = absl::InvalidArgumentError(
      "page_token: malformed (pass back a next_page_token unchanged, or \"\" for the first page)");
  if (token.size() > kMaxPageTokenBytes) return malformed;
  std::string raw;
  if (!absl::WebSafeBase64Unescape(token, &raw)) return malformed;
  absl::string_view rest = raw;
  if (!absl::ConsumePrefix(&rest, kPageTokenPrefix)) return malformed;
  const std::vector<absl::string_view> parts = absl::StrSplit(rest, '.');
  int64_t seq = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &seq) || seq <= 0) return malformed;
  const std::string body = PageTokenBody(seq);
  if (raw != absl::StrCat(body, parts[1])) return malformed;  // e.g. "+5" or "05"
  if (parts[1] != PageTokenCheck(filter, body)) {
    return absl::InvalidArgumentError(
        "page_token: not issued for this filter (the filter must not change between pages)");
  }
  return seq;
}

size_t DropRepeatsWithinBatch(std::vector<Measurement>* batch, std::vector<std::string>* scenarios,
                              std::vector<size_t>* original) {
  original->resize(batch->size());
  for (size_t i = 0; i < original->size(); ++i) (*original)[i] = i;
  std::set<std::string> seen;
  size_t kept = 0;
  for (size_t i = 0; i < batch->size(); ++i) {
    const Measurement& m = (*batch)[i];
    std::string key =
        absl::StrCat((*scenarios)[i].size(), ":", (*scenarios)[i], m.source.size(), ":", m.source);
    for (double v : {m.tokens_per_s_per_gpu, m.step_time_s, m.watts_per_gpu}) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "|%.17g", v);
      key += buf;
    }
    if (!seen.insert(std::move(key)).second) continue;
    if (kept != i) {
      (*batch)[kept] = std::move((*batch)[i]);
      (*scenarios)[kept] = std::move((*scenarios)[i]);
      (*original)[kept] = i;
    }
    ++kept;
  }
  const size_t dropped = batch->size() - kept;
  batch->resize(kept);
  scenarios->resize(kept);
  original->resize(kept);
  return dropped;
}

absl::Status PrepareChunk(std::vector<Measurement>* chunk, size_t first, int64_t now_ms) {
  for (size_t i = 0; i < chunk->size(); ++i) {
    RETURN_IF_ERROR(ValidateMeasurement((*chunk)[i], first + i));
  }
  for (Measurement& m : *chunk) {
    if (m.recorded_at_unix_ms == 0) m.recorded_at_unix_ms = now_ms;
  }
  return absl::OkStatus();
}

namespace {

// The spec's fields by their API names, for the stored text (id is the row's key).
struct SpecFields {
  std::vector<std::pair<const char*, double*>> reals;
  std::vector<std::pair<const char*, int*>> ints;
};
SpecFields FieldsOf(AcceleratorSpec* s) {
  return {{{"peak_tflops_bf16", &s->peak_tflops_bf16},
           {"peak_tflops_fp8", &s->peak_tflops_fp8},
           {"peak_tflops_fp4", &s->peak_tflops_fp4},
           {"hbm_gb", &s->hbm_gb},
           {"hbm_tb_s", &s->hbm_tb_s},
           {"nvlink_gb_s", &s->nvlink_gb_s},
           {"inter_node_gbps_per_gpu", &s->inter_node_gbps_per_gpu},
           {"tdp_watts", &s->tdp_watts},
           {"idle_watts", &s->idle_watts},
           {"tensor_flops_per_exp", &s->tensor_flops_per_exp}},
          {{"nvlink_domain", &s->nvlink_domain}}};
}

}  // namespace

absl::StatusOr<std::string> AcceleratorText(const StoredAccelerator& a) {
  AcceleratorSpec s = a.spec;
  if (s.id.empty()) return absl::InvalidArgumentError("spec.id: must not be empty");
  if (s.id.size() > kMaxNameBytes || s.like.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat("spec.",
                                                   s.id.size() > kMaxNameBytes ? "id" : "like",
                                                   ": longer than ", kMaxNameBytes, " bytes"));
  }
  if (s.like.find_first_of("\n\r") != std::string::npos) {
    return absl::InvalidArgumentError("spec.like: must not hold a line break");
  }
  std::string text = absl::StrCat("like = ", s.like, "\n");
  const SpecFields f = FieldsOf(&s);
  for (const auto& [name, v] : f.reals) {
    if (!std::isfinite(*v)) {
      return absl::InvalidArgumentError(absl::StrCat("spec.", name, ": must be finite"));
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17g", *v);
    absl::StrAppend(&text, name, " = ", buf, "\n");
  }
  for (const auto& [name, v] : f.ints) absl::StrAppend(&text, name, " = ", *v, "\n");
  return text;
}

absl::StatusOr<AcceleratorSpec> ParseAcceleratorText(const std::string& id,
                                                     const std::string& text) {
  AcceleratorSpec s;
  s.id = id;
  const SpecFields f = FieldsOf(&s);
  auto corrupt = [&id](absl::string_view why) {
    return absl::InternalError(absl::StrCat("stored accelerator '", id, "' is corrupt: ", why));
  };
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const size_t eq = line.find(" = ");
    if (eq == absl::string_view::npos) return corrupt(absl::StrCat("line '", line, "'"));
    const absl::string_view key = line.substr(0, eq), value = line.substr(eq + 3);
    if (key == "like") {
      s.like = std::string(value);
      continue;
    }
    bool known = false;
    for (const auto& [name, v] : f.reals) {
      if (key != name) continue;
      known = true;
      if (!absl::SimpleAtod(value, v)) return corrupt(absl::StrCat(key, " = ", value));
    }
    for (const auto& [name, v] : f.ints) {
      if (key != name) continue;
      known = true;
      if (!absl::SimpleAtoi(value, v)) return corrupt(absl::StrCat(key, " = ", value));
    }
    if (!known) return corrupt(absl::StrCat("unknown key '", key, "'"));
  }
  return s;
}

absl::StatusOr<std::string> ProfileText(const StoredProfile& p) {
  const Profile& profile = p.profile;
  if (profile.name.empty()) return absl::InvalidArgumentError("profile.name: must not be empty");
  if (profile.name.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile.name: longer than ", kMaxNameBytes, " bytes"));
  }
  for (const auto& [field, value] : {std::pair<const char*, double>{"mape_before", p.mape_before},
                                     {"mape_after", p.mape_after},
                                     {"cv_mape", p.cv_mape}}) {
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": must be finite, got ", value));
    }
  }
  std::string text = profile.ToText();
  absl::StatusOr<Profile> reread = Profile::FromText(text);
  if (!reread.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("profile: ", reread.status().message()));
  }
  const char* changed = reread->name != profile.name                 ? "name"
                        : reread->description != profile.description ? "description"
                        : reread->info != profile.info               ? "info"
                        : reread->base != profile.base               ? "base"
                        : reread->changes != profile.changes         ? "changes"
                                                                     : nullptr;
  if (changed != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile.", changed,
                     ": would not read back unchanged (no newlines, '#', '=' in keys, or leading "
                     "or trailing spaces)"));
  }
  return text;
}

ProfileBases ReadProfileBases(const std::vector<std::pair<std::string, std::string>>& name_text) {
  ProfileBases out;
  for (const auto& [name, text] : name_text) {
    absl::StatusOr<Profile> p = Profile::FromText(text);
    out[name] = p.ok() ? p->base : "";  // a corrupt text is reported where it is read
  }
  return out;
}

absl::Status CheckLayerWrite(const Profile& p, const ProfileBases& bases) {
  if (!p.IsLayer()) return absl::OkStatus();
  std::vector<std::string> chain = {p.name};
  std::string next = p.base;
  while (next != "default") {
    chain.push_back(next);
    if (next == p.name) {
      return absl::InvalidArgumentError(absl::StrCat("profile.base: '", p.base, "' layers on '",
                                                     p.name, "' (", absl::StrJoin(chain, " -> "),
                                                     "); a profile cannot layer on itself"));
    }
    auto it = bases.find(next);
    if (it == bases.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("profile.base: profile '", next, "' is not stored"));
    }
    if (static_cast<int>(chain.size()) > kMaxProfileDepth) {
      return absl::FailedPreconditionError(absl::StrCat("profile.base: more than ",
                                                        kMaxProfileDepth, " layers deep (",
                                                        absl::StrJoin(chain, " -> "), ")"));
    }
    if (it->second.empty()) break;  // a full profile
    next = it->second;
  }
  return absl::OkStatus();
}

std::vector<std::string> DependantsOf(const std::string& name, const ProfileBases& bases,
                                      bool transitive) {
  std::vector<std::string> out;
  std::vector<std::string> frontier = {name};
  while (!frontier.empty()) {
    const std::string of = frontier.back();
    frontier.pop_back();
    for (const auto& [n, base] : bases) {
      if (base != of || n == name) continue;
      if (std::find(out.begin(), out.end(), n) != out.end()) continue;
      out.push_back(n);
      if (transitive) frontier.push_back(n);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::Status CheckNoDependants(const std::string& name, const ProfileBases& bases) {
  const std::vector<std::string> on = DependantsOf(name, bases, false);
  if (on.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("profile '", name, "' is the base of ",
                   on.size() == 1 ? "profile '" : "profiles '", absl::StrJoin(on, "', '"),
                   "'; delete or replace ", on.size() == 1 ? "it" : "them", " first"));
}

}  // namespace store_internal
}  // namespace scalecast
