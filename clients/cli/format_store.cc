// Output of the measurement, validation, calibration and catalog commands.
#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "clients/cli/format.h"
#include "clients/cli/scenario_fields.h"
#include "clients/cli/table.h"
#include "model/measurements.h"

namespace scalecast::cli {
namespace {

std::string Lower(const std::string& enum_name, size_t prefix) {
  if (absl::EndsWith(enum_name, "_UNSPECIFIED") || enum_name.size() <= prefix) return "";
  return absl::AsciiStrToLower(enum_name.substr(prefix));
}

// A stored run's layout as recorded: blanks were left to the planner.
std::string RecordedLayout(const pb::Parallelism& p) {
  std::vector<std::string> parts;
  auto degree = [&](const char* name, int v) {
    if (v > 0) parts.push_back(absl::StrCat(name, v));
  };
  degree("tp", p.tp());
  degree("pp", p.pp());
  if (p.vpp() > 1) degree("vpp", p.vpp());
  degree("cp", p.cp());
  degree("dp", p.dp());
  if (std::string s = Lower(pb::Sharding_Name(p.sharding()), 9); !s.empty()) parts.push_back(s);
  degree("mb", p.micro_batch());
  return parts.empty() ? "(planner)" : absl::StrJoin(parts, " ");
}

// At most n bytes: a longer string keeps a prefix cut at a UTF-8 character boundary, then "...".
std::string Truncate(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  size_t cut = n - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

std::string Timestamp(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0 && t.nanos() == 0) return "";
  google::protobuf::Timestamp whole = t;
  whole.set_nanos(0);
  return google::protobuf::util::TimeUtil::ToString(whole);
}

Table StatsTable(const std::string& title) {
  return Table({{title, true}, {"runs"}, {"MAPE"}, {"median APE"}});
}

std::vector<std::string> StatsRow(const std::string& name, const pb::ErrorStats& s) {
  return {name, absl::StrCat(s.count()), Percent(s.mape()), Percent(s.median_ape())};
}

template <typename Map>
std::vector<std::string> SortedKeys(const Map& m) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : m) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  return keys;
}

// The names of a by_source/by_label map, most runs first (ties: by name), as the server chose
// which to send.
template <typename Map>
std::vector<std::string> KeysByCount(const Map& m) {
  std::vector<std::string> keys = SortedKeys(m);
  std::stable_sort(keys.begin(), keys.end(), [&](const std::string& a, const std::string& b) {
    return m.at(a).count() > m.at(b).count();
  });
  return keys;
}

// Source and label names longer than this are cut with "..." in tables (not with --wide):
// with the three number columns the table stays within kTableWidth.
constexpr size_t kGroupNameWidth = 80;
// Rows of a per-source or per-label table (not with --wide): the groups with the most runs.
constexpr size_t kGroupRows = 20;

// One per-source or per-label table, most runs first, with a note of the groups not shown.
template <typename Map>
std::string GroupTable(const std::string& title, const std::string& plural, const Map& m,
                       int omitted, bool wide) {
  if (m.empty() && omitted == 0) return "";
  Table t = StatsTable(title);
  for (const std::string& k : KeysByCount(m)) {
    if (!wide && t.size() == kGroupRows) break;
    t.AddRow(StatsRow(wide ? k : Truncate(k, kGroupNameWidth), m.at(k)));
  }
  std::string out = absl::StrCat("\n", t.Render());
  const size_t total = m.size() + static_cast<size_t>(std::max(omitted, 0));
  if (t.size() == total) return out;
  absl::StrAppend(&out, "(", t.size(), " of ", total, " ", plural, " shown");
  if (t.size() < m.size()) {
    absl::StrAppend(&out, ", most runs first; --wide or --csv list ",
                    omitted > 0 ? absl::StrCat("the ", m.size(), " the server sends") : "all");
  } else {
    absl::StrAppend(&out, ": the server sends the ", m.size(), " with the most runs");
  }
  absl::StrAppend(&out, ")\n");
  return out;
}

}  // namespace

std::string FormatMeasurementsTable(const pb::ListMeasurementsResponse& r, bool wide) {
  Table t({{"id", true},
           {"framework", true},
           {"model", true},
           {"accelerator", true},
           {"GPUs"},
           {"layout", true},
           {"tok/s/GPU"},
           {"precision", true, true},
           {"seq", false, true},
           {"source", true, true},
           {"recorded", true, true}});
  for (const pb::Measurement& m : r.measurements()) {
    const pb::Scenario& s = m.scenario();
    t.AddRow({m.id(), s.framework(),
              wide ? s.workload().model().name() : Truncate(s.workload().model().name(), 28),
              s.cluster().accelerator(), absl::StrCat(s.cluster().num_gpus()),
              RecordedLayout(s.parallelism()), Thousands(m.tokens_per_s_per_gpu(), 1),
              Lower(pb::Precision_Name(s.workload().precision()), 10),
              absl::StrCat(s.workload().seq_len()), Truncate(m.source(), 32),
              Timestamp(m.recorded_at())});
  }
  std::string out = t.size() > 0 ? t.Render("", wide ? 0 : kTableWidth) : "";
  absl::StrAppend(&out, r.measurements_size(), " of ", r.total_count(), " matching runs shown.");
  if (!r.next_page_token().empty()) {
    absl::StrAppend(&out, " Next page: --page-token ", r.next_page_token(), " (or --all)");
  }
  return out + "\n";
}

namespace {

// The recompute column: the kind, then Megatron-Core's modules ("selective: core_attn+mlp").
std::string RecomputeCell(const pb::Parallelism& p) {
  std::string kind = Lower(pb::Recompute_Name(p.recompute()), 10);
  if (p.recompute_modules_size() == 0) return kind;
  return absl::StrCat(kind, ": ", absl::StrJoin(p.recompute_modules(), "+"));
}

// Columns the CSV reader reads by rules of its own, not from a field's `csv` option: the
// enums by their names, the recompute modules within the recompute column, and "mla" for latent
// attention (model/measurements.cc).
struct NamedColumn {
  const char* name;
  std::string (*cell)(const pb::Scenario&);
};
constexpr NamedColumn kNamedColumns[] = {
    {"framework", [](const pb::Scenario& s) { return s.framework(); }},
    {"mlp",
     [](const pb::Scenario& s) { return Lower(pb::Mlp_Name(s.workload().model().mlp()), 4); }},
    {"precision",
     [](const pb::Scenario& s) { return Lower(pb::Precision_Name(s.workload().precision()), 10); }},
    {"sharding",
     [](const pb::Scenario& s) { return Lower(pb::Sharding_Name(s.parallelism().sharding()), 9); }},
    {"recompute", [](const pb::Scenario& s) { return RecomputeCell(s.parallelism()); }},
    {"attention",
     [](const pb::Scenario& s) {
       return std::string(s.workload().model().mla().kv_lora_rank() > 0 ? "mla" : "");
     }},
};

}  // namespace

std::string FormatMeasurementsCsv(const pb::ListMeasurementsResponse& r) {
  // The store's id; the run's scenario, every column the proto declares (ScenarioCsvColumns) and
  // the named ones; what was measured; when; and the run's id in the CSV it came from, which an
  // import of this file keeps (csv_id).
  const std::vector<CsvColumn>& fields = ScenarioCsvColumns();
  std::vector<std::string> header = {"id", "source"};
  for (const NamedColumn& c : kNamedColumns) header.push_back(c.name);
  for (const CsvColumn& f : fields) header.push_back(f.column);
  for (const char* c : {"tokens_per_s_per_gpu", "step_time_s", "watts_per_gpu", kNoteLabel,
                        "recorded_at", kCsvIdLabel}) {
    header.push_back(c);
  }
  std::string out = CsvLine(header);
  for (const pb::Measurement& m : r.measurements()) {
    auto label = [&](const std::string& k) {
      auto it = m.labels().find(k);
      return it == m.labels().end() ? std::string() : it->second;
    };
    std::vector<std::string> row = {m.id(), m.source()};
    for (const NamedColumn& c : kNamedColumns) row.push_back(c.cell(m.scenario()));
    for (const CsvColumn& f : fields) row.push_back(CsvCell(f, m.scenario()));
    row.push_back(ExactDouble(m.tokens_per_s_per_gpu()));
    row.push_back(m.step_time_s() > 0 ? ExactDouble(m.step_time_s()) : "");
    row.push_back(m.watts_per_gpu() > 0 ? ExactDouble(m.watts_per_gpu()) : "");
    row.push_back(label(kNoteLabel));
    row.push_back(Timestamp(m.recorded_at()));
    row.push_back(label(kCsvIdLabel));
    out += CsvLine(row);
  }
  return out;
}

std::string FormatValidateTable(const pb::ValidateResponse& r, bool rows, bool wide) {
  std::string out = absl::StrCat(
      "Validation of ", r.overall().count(), " stored runs, calibration ",
      r.calibration().empty() ? "default" : r.calibration(), ", model version ", r.model_version(),
      r.failed_count() > 0 ? absl::StrCat("; ", r.failed_count(), " failed") : "", "\n\n");
  if (!r.profile_drift().empty()) {
    absl::StrAppend(&out, "Profile '", r.calibration(), "' ", r.profile_drift(), "\n\n");
  }
  Table overall = StatsTable("scope");
  overall.AddRow(StatsRow("all runs", r.overall()));
  absl::StrAppend(&out, overall.Render());
  Table by_framework = StatsTable("framework");
  for (const std::string& k : SortedKeys(r.by_framework())) {
    by_framework.AddRow(StatsRow(k, r.by_framework().at(k)));
  }
  absl::StrAppend(&out, "\n", by_framework.Render());
  Table by_accelerator = StatsTable("accelerator");
  for (const std::string& k : SortedKeys(r.by_accelerator())) {
    by_accelerator.AddRow(StatsRow(k, r.by_accelerator().at(k)));
  }
  absl::StrAppend(&out, "\n", by_accelerator.Render());
  absl::StrAppend(&out,
                  GroupTable("source", "sources", r.by_source(), r.by_source_omitted_count(), wide),
                  GroupTable("label", "labels", r.by_label(), r.by_label_omitted_count(), wide));
  absl::StrAppend(&out,
                  "\nMAPE: mean absolute percentage error of predicted vs measured "
                  "tokens/s per GPU.\n");
  if (rows) {
    Table t({{"id", true},
             {"framework", true, true},
             {"accelerator", true},
             {"layout", true},
             {"predicted"},
             {"measured"},
             {"error"},
             {"failure", true, true},
             {"label", true, true}});
    for (const pb::ValidationRow& row : r.rows()) {
      const bool failed = !row.failure().empty();
      t.AddRow({row.measurement_id(), row.framework(), row.accelerator(),
                failed ? "-" : LayoutShort(row.layout()),
                failed ? "-" : Thousands(row.predicted_tokens_per_s_per_gpu(), 1),
                Thousands(row.measured_tokens_per_s_per_gpu(), 1),
                failed ? "-" : absl::StrCat(row.error() >= 0 ? "+" : "", Percent(row.error())),
                row.failure(), wide ? row.label() : Truncate(row.label(), 24)});
    }
    absl::StrAppend(&out, "\nRuns (error = predicted / measured - 1)\n",
                    t.Render("", wide ? 0 : kTableWidth));
  } else if (r.failed_count() > 0) {
    absl::StrAppend(&out, "Use --rows to see the ", r.failed_count(), " runs that failed.\n");
  }
  return out;
}

std::string FormatValidateCsv(const pb::ValidateResponse& r) {
  if (!r.rows().empty()) {
    std::string out =
        CsvLine({"measurement_id", "label", "framework", "accelerator", "tp", "pp", "vpp", "cp",
                 "dp", "sharding", "micro_batch", "recompute", "predicted_tokens_per_s_per_gpu",
                 "measured_tokens_per_s_per_gpu", "error", "failure"});
    for (const pb::ValidationRow& row : r.rows()) {
      const pb::Parallelism& p = row.layout();
      out += CsvLine({row.measurement_id(), row.label(), row.framework(), row.accelerator(),
                      absl::StrCat(p.tp()), absl::StrCat(p.pp()), absl::StrCat(p.vpp()),
                      absl::StrCat(p.cp()), absl::StrCat(p.dp()),
                      Lower(pb::Sharding_Name(p.sharding()), 9), absl::StrCat(p.micro_batch()),
                      Lower(pb::Recompute_Name(p.recompute()), 10),
                      ExactDouble(row.predicted_tokens_per_s_per_gpu()),
                      ExactDouble(row.measured_tokens_per_s_per_gpu()), ExactDouble(row.error()),
                      row.failure()});
    }
    return out;
  }
  std::string out = CsvLine({"group", "name", "count", "mape", "median_ape"});
  auto row = [&](const std::string& group, const std::string& name, const pb::ErrorStats& s) {
    out += CsvLine(
        {group, name, absl::StrCat(s.count()), ExactDouble(s.mape()), ExactDouble(s.median_ape())});
  };
  row("overall", "", r.overall());
  for (const std::string& k : SortedKeys(r.by_framework())) {
    row("framework", k, r.by_framework().at(k));
  }
  for (const std::string& k : SortedKeys(r.by_accelerator())) {
    row("accelerator", k, r.by_accelerator().at(k));
  }
  for (const std::string& k : KeysByCount(r.by_source())) row("source", k, r.by_source().at(k));
  for (const std::string& k : KeysByCount(r.by_label())) row("label", k, r.by_label().at(k));
  return out;
}

namespace {

// A layer's changes, old -> new, with the runs behind each.
std::string ChangesTable(const pb::CalibrationProfile& p) {
  Table t({{"parameter", true}, {"old"}, {"new"}, {"change"}, {"runs"}, {"evidence", true, true}});
  for (const pb::ParameterChange& c : p.changes()) {
    t.AddRow({c.key(), Significant(c.old_value(), 4), Significant(c.new_value(), 4),
              absl::StrCat(c.new_value() >= c.old_value() ? "+" : "",
                           Percent(c.new_value() / c.old_value() - 1)),
              absl::StrCat(c.runs()), c.evidence()});
  }
  return t.Render("  ", kTableWidth);
}

}  // namespace

std::string FormatCalibrateTable(const pb::CalibrateResponse& r) {
  const pb::CalibrationProfile& p = r.profile();
  std::string out =
      absl::StrCat("Calibration profile '", p.name(), "'",
                   p.base().empty() ? "" : absl::StrCat(": a layer over '", p.base(), "'"),
                   ", fitted on ", p.fitted_count(), " runs",
                   p.fitted_on().empty() ? "" : absl::StrCat(" (", p.fitted_on(), ")"), "\n");
  if (r.accepted()) {
    absl::StrAppend(&out, "Accepted and stored: ", r.reason(), "\n");
  } else {
    absl::StrAppend(&out, "Declined; stored as '", p.base(),
                    "' unchanged under the name, so it predicts as its start: ", r.reason(), "\n");
  }
  if (p.changes_size() > 0) {
    absl::StrAppend(&out, "\nChanged parameters (the rest is '", p.base(), "')\n", ChangesTable(p));
  }
  Table t = StatsTable("error");
  t.AddRow(StatsRow("fitted runs, before", r.before()));
  t.AddRow(StatsRow("fitted runs, after (in-sample)", r.after()));
  if (r.validated()) {
    t.AddRow(StatsRow("fitted runs held out, before", r.held_out_before()));
    t.AddRow(StatsRow("fitted runs held out, after", r.held_out_after()));
  }
  const std::string others = r.others_sampled()
                                 ? absl::StrCat("other runs (", r.others_before().count(), " of ",
                                                r.others_stored(), "), ")
                                 : "other stored runs, ";
  if (r.others_stored() > 0) {
    t.AddRow(StatsRow(others + "before", r.others_before()));
    t.AddRow(StatsRow(others + "after", r.others_after()));
  }
  absl::StrAppend(&out, "\n", t.Render());
  if (r.others_stored() > 0 && r.others_after().mape() > r.others_before().mape()) {
    absl::StrAppend(&out, "\nThe other stored runs' error rises (",
                    Percent(r.others_before().mape()), " -> ", Percent(r.others_after().mape()),
                    "): use this profile for runs like those it was fitted on.\n");
  }
  if (!r.validated()) {
    absl::StrAppend(&out, "\nNot validated: a held-out check needs two runs or more.\n");
  }
  if (r.others_skipped_count() > 0) {
    absl::StrAppend(&out, "\n", r.others_skipped_count(),
                    r.others_skipped_count() == 1 ? " stored run was" : " stored runs were",
                    " left out of the checks (delete them with DeleteMeasurement):\n");
    for (const std::string& s : r.others_skipped()) absl::StrAppend(&out, "  ", s, "\n");
  }
  return out;
}

std::string FormatCalibrateCsv(const pb::CalibrateResponse& r) {
  std::string out = CsvLine({"parameter", "old_value", "new_value", "runs", "evidence"});
  for (const pb::ParameterChange& c : r.profile().changes()) {
    out += CsvLine({c.key(), ExactDouble(c.old_value()), ExactDouble(c.new_value()),
                    absl::StrCat(c.runs()), c.evidence()});
  }
  return out;
}

std::string FormatProfilesTable(const pb::ListProfilesResponse& r) {
  if (r.profiles().empty()) return "No stored calibration profiles.\n";
  Table t({{"name", true},
           {"base", true},
           {"runs"},
           {"MAPE before"},
           {"MAPE after"},
           {"CV MAPE"},
           {"created", true},
           {"fitted on", true, true}});
  for (const pb::CalibrationProfile& p : r.profiles()) {
    t.AddRow({p.name(),
              p.base().empty()              ? "-"
              : p.declined_reason().empty() ? p.base()
                                            : absl::StrCat(p.base(), " (declined)"),
              absl::StrCat(p.fitted_count()), Percent(p.mape_before()), Percent(p.mape_after()),
              p.cross_validated_mape() > 0 ? Percent(p.cross_validated_mape()) : "-",
              Timestamp(p.created_at()), p.fitted_on()});
  }
  std::string out = t.Render("", kTableWidth);
  for (const pb::CalibrationProfile& p : r.profiles()) {
    if (!p.drift().empty()) absl::StrAppend(&out, "\n'", p.name(), "' ", p.drift(), "\n");
  }
  return out;
}

std::string FormatProfilesCsv(const pb::ListProfilesResponse& r) {
  std::string out = CsvLine({"name", "fitted_count", "mape_before", "mape_after",
                             "cross_validated_mape", "created_at", "fitted_on"});
  for (const pb::CalibrationProfile& p : r.profiles()) {
    out += CsvLine({p.name(), absl::StrCat(p.fitted_count()), ExactDouble(p.mape_before()),
                    ExactDouble(p.mape_after()), ExactDouble(p.cross_validated_mape()),
                    Timestamp(p.created_at()), p.fitted_on()});
  }
  return out;
}

std::string FormatProfileTable(const pb::CalibrationProfile& p) {
  std::string out = absl::StrCat(
      "Calibration profile '", p.name(), "' fitted on ", p.fitted_count(), " runs",
      p.fitted_on().empty() ? "" : absl::StrCat(" (", p.fitted_on(), ")"), ", created ",
      Timestamp(p.created_at()), "\nMAPE on those runs: ", Percent(p.mape_before()), " before, ",
      Percent(p.mape_after()), " after");
  if (p.cross_validated_mape() > 0) {
    absl::StrAppend(&out, ", ", Percent(p.cross_validated_mape()), " cross-validated");
  }
  if (!p.drift().empty()) absl::StrAppend(&out, "\nThe profile has ", p.drift());
  if (!p.declined_reason().empty()) {
    absl::StrAppend(&out, "\nDeclined: the profile is '", p.base(), "' unchanged. ",
                    p.declined_reason(), "\n");
    return out;
  }
  if (!p.base().empty()) {
    // A layer: its base and what it changed; every other parameter is the base's.
    absl::StrAppend(&out, "\nA layer over '", p.base(), "'; ", p.changes_size(),
                    p.changes_size() == 1 ? " parameter" : " parameters",
                    " changed (the rest is the base's)\n\n", ChangesTable(p));
    return out;
  }
  Table params({{"parameter", true}, {"value"}});
  for (const std::string& k : SortedKeys(p.parameters())) {
    params.AddRow({k, Significant(p.parameters().at(k), 4)});
  }
  absl::StrAppend(&out, "\n\nParameters\n", params.Render("  "));
  return out;
}

std::string FormatProfileCsv(const pb::CalibrationProfile& p) {
  if (!p.base().empty()) {
    std::string out = CsvLine({"parameter", "old_value", "new_value", "runs", "evidence"});
    for (const pb::ParameterChange& c : p.changes()) {
      out += CsvLine({c.key(), ExactDouble(c.old_value()), ExactDouble(c.new_value()),
                      absl::StrCat(c.runs()), c.evidence()});
    }
    return out;
  }
  std::string out = CsvLine({"parameter", "value"});
  for (const std::string& k : SortedKeys(p.parameters())) {
    out += CsvLine({k, ExactDouble(p.parameters().at(k))});
  }
  return out;
}

std::string FormatAcceleratorsTable(const pb::ListAcceleratorsResponse& r, bool wide) {
  Table t({{"id", true},
           {"name", true, true},
           {"family", true},
           {"origin", true},
           {"fp16 TFLOP/s"},
           {"bf16 TFLOP/s"},
           {"fp8 TFLOP/s"},
           {"HBM GiB"},
           {"HBM TB/s"},
           {"TDP W"},
           {"GPUs/node"},
           {"NVLink domain", false, true},
           {"NVLink GB/s", false, true},
           {"net Gb/s/GPU", false, true}});
  for (const pb::Accelerator& a : r.accelerators()) {
    auto peak = [&](const char* k) {
      auto it = a.peak_tflops().find(k);
      return it == a.peak_tflops().end() || it->second <= 0 ? std::string("-")
                                                            : Thousands(it->second);
    };
    // A part on another's fitted efficiencies says whose (a catalog part no run is on, a
    // described one).
    const std::string origin =
        absl::StrCat(a.origin().empty() ? "catalog" : a.origin(),
                     a.like().empty() ? "" : absl::StrCat(", like ", a.like()));
    t.AddRow({a.id(), a.name(), a.family(), origin, peak("fp16"), peak("bf16"), peak("fp8"),
              Fixed(a.hbm_bytes() / (1024.0 * 1024 * 1024), 0),
              Fixed(a.hbm_bytes_per_s() / 1e12, 2), Thousands(a.tdp_watts()),
              absl::StrCat(a.gpus_per_node()), absl::StrCat(a.nvlink_domain()),
              Thousands(a.nvlink_bytes_per_s() / 1e9), Thousands(a.network_gbps_per_gpu())});
  }
  std::string out = t.Render("", wide ? 0 : kTableWidth);
  if (r.systems_size() == 0) return out;
  // Systems name a part and its node (--accelerator p5.48xlarge).
  Table systems({{"system", true},
                 {"name", true, true},
                 {"part", true},
                 {"GPUs/node"},
                 {"net Gb/s/GPU"},
                 {"also named", true, true}});
  for (const pb::System& s : r.systems()) {
    systems.AddRow({s.id(), s.name(), s.accelerator(), absl::StrCat(s.gpus_per_node()),
                    absl::StrFormat("%g", s.network_gbps_per_gpu()),
                    absl::StrJoin(s.aliases(), ", ")});
  }
  return absl::StrCat(out, "\nSystems (a part and its node: --accelerator p5.48xlarge)\n",
                      systems.Render("", wide ? 0 : kTableWidth));
}

std::string FormatAcceleratorsCsv(const pb::ListAcceleratorsResponse& r) {
  std::set<std::string> precisions;
  for (const pb::Accelerator& a : r.accelerators()) {
    for (const auto& [k, v] : a.peak_tflops()) precisions.insert(k);
  }
  std::vector<std::string> header{"id", "name", "family"};
  for (const std::string& p : precisions) header.push_back("peak_tflops_" + p);
  for (const char* c : {"hbm_bytes", "hbm_bytes_per_s", "tdp_watts", "power_limit_watts",
                        "idle_watts", "gpus_per_node", "nvlink_domain", "nvlink_bytes_per_s",
                        "network_gbps_per_gpu", "origin", "like"}) {
    header.push_back(c);
  }
  std::string out = CsvLine(header);
  for (const pb::Accelerator& a : r.accelerators()) {
    std::vector<std::string> row{a.id(), a.name(), a.family()};
    for (const std::string& p : precisions) {
      auto it = a.peak_tflops().find(p);
      row.push_back(it == a.peak_tflops().end() ? "" : ExactDouble(it->second));
    }
    for (double v : {a.hbm_bytes(), a.hbm_bytes_per_s(), a.tdp_watts(), a.power_limit_watts(),
                     a.idle_watts()}) {
      row.push_back(ExactDouble(v));
    }
    row.push_back(absl::StrCat(a.gpus_per_node()));
    row.push_back(absl::StrCat(a.nvlink_domain()));
    row.push_back(ExactDouble(a.nvlink_bytes_per_s()));
    row.push_back(ExactDouble(a.network_gbps_per_gpu()));
    row.push_back(a.origin().empty() ? "catalog" : a.origin());
    row.push_back(a.like());
    out += CsvLine(row);
  }
  return out;
}

namespace {

// "671B", "37B", "1.03T"; "-" when unknown.
std::string ParamsWords(double n) {
  if (n <= 0) return "-";
  if (n >= 1e12) return absl::StrCat(Significant(n / 1e12, 3), "T");
  return absl::StrCat(Significant(n / 1e9, 3), "B");
}

// "256/8" routed experts / experts per token; "-" for a dense model.
std::string ExpertsWords(const pb::ModelSpec& m) {
  if (m.moe().num_experts() <= 0) return "-";
  std::string out = absl::StrCat(m.moe().num_experts(), "/", m.moe().experts_per_token());
  if (m.moe().shared_experts() > 0) absl::StrAppend(&out, "+", m.moe().shared_experts());
  return out;
}

}  // namespace

std::string FormatModelsTable(const pb::ListModelsResponse& r) {
  Table t({{"name", true},
           {"params"},
           {"active"},
           {"layers"},
           {"hidden"},
           {"heads"},
           {"kv"},  // key/value heads (the header keeps the table within 120 columns)
           {"ffn hidden"},
           {"mlp", true},
           {"vocab"},
           {"experts"},
           {"expert ffn"}});
  for (int i = 0; i < r.models_size(); ++i) {
    const pb::ModelSpec& m = r.models(i);
    const pb::ModelSize size = i < r.sizes_size() ? r.sizes(i) : pb::ModelSize();
    t.AddRow({m.name(), ParamsWords(size.total_params()), ParamsWords(size.activated_params()),
              absl::StrCat(m.layers()), absl::StrCat(m.hidden()), absl::StrCat(m.heads()),
              absl::StrCat(m.kv_heads() > 0 ? m.kv_heads() : m.heads()),
              m.ffn_hidden() > 0 ? absl::StrCat(m.ffn_hidden()) : "-",
              Lower(pb::Mlp_Name(m.mlp()), 4), absl::StrCat(m.vocab()), ExpertsWords(m),
              m.moe().num_experts() > 0 ? absl::StrCat(m.moe().expert_ffn_hidden()) : "-"});
  }
  return t.Render();
}

std::string FormatModelsCsv(const pb::ListModelsResponse& r) {
  std::string out = CsvLine({"name", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "mlp",
                             "vocab", "head_dim", "num_experts", "experts_per_token",
                             "expert_ffn_hidden", "shared_experts", "shared_ffn_hidden",
                             "dense_layers", "total_params", "activated_params"});
  for (int i = 0; i < r.models_size(); ++i) {
    const pb::ModelSpec& m = r.models(i);
    const pb::ModelSize size = i < r.sizes_size() ? r.sizes(i) : pb::ModelSize();
    const pb::MoeSpec& e = m.moe();
    out += CsvLine({m.name(), absl::StrCat(m.layers()), absl::StrCat(m.hidden()),
                    absl::StrCat(m.heads()), absl::StrCat(m.kv_heads()),
                    absl::StrCat(m.ffn_hidden()), Lower(pb::Mlp_Name(m.mlp()), 4),
                    absl::StrCat(m.vocab()), absl::StrCat(m.head_dim()),
                    absl::StrCat(e.num_experts()), absl::StrCat(e.experts_per_token()),
                    absl::StrCat(e.expert_ffn_hidden()), absl::StrCat(e.shared_experts()),
                    absl::StrCat(e.shared_ffn_hidden()), absl::StrCat(e.dense_layers()),
                    ExactDouble(size.total_params()), ExactDouble(size.activated_params())});
  }
  return out;
}

}  // namespace scalecast::cli
