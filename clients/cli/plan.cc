#include "clients/cli/plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "clients/cli/cli.h"
#include "clients/cli/format.h"
#include "clients/cli/scenario_fields.h"
#include "clients/cli/table.h"
#include "model/status_macros.h"

namespace scalecast::cli {
namespace {

std::string Money(double v) {
  if (!std::isfinite(v)) return "-";
  if (v < 0) return "-" + Money(-v);
  if (v >= 1e6) return absl::StrFormat("$%.2fM", v / 1e6);
  if (v >= 1e3) return absl::StrFormat("$%.1fk", v / 1e3);
  return absl::StrFormat("$%.0f", v);
}

std::string Days(double d) { return std::isfinite(d) ? Significant(d, 3) : "never"; }

std::string Flags(const pb::PlanOption& o) {
  std::string f;
  if (o.meets_constraints()) f += "ok";
  if (o.pareto()) f += f.empty() ? "pareto" : " pareto";
  if (o.smallest()) f += f.empty() ? "smallest" : " smallest";
  return f;
}

// The options' own warnings (how the framework and its version were read, what a candidate's
// accelerator name was taken as), each once in the order first met, with the options it concerns
// where not every one ("(#2, #4)").
std::string OptionWarnings(const pb::PlanResponse& r) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> options;
  for (int i = 0; i < r.options_size(); ++i) {
    for (const std::string& w : r.options(i).prediction().warnings()) {
      std::vector<int>& ranks = options[w];
      if (ranks.empty()) order.push_back(w);
      ranks.push_back(i + 1);
    }
  }
  std::string out;
  for (const std::string& w : order) {
    const std::vector<int>& ranks = options[w];
    absl::StrAppend(&out, "  - ", w);
    if (static_cast<int>(ranks.size()) < r.options_size()) {
      absl::StrAppend(
          &out, " (",
          absl::StrJoin(ranks, ", ",
                        [](std::string* s, int rank) { absl::StrAppend(s, "#", rank); }),
          ")");
    }
    out += "\n";
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<pb::PlanCandidate>> ParseCandidates(const std::string& flag,
                                                               const std::string& value) {
  std::vector<pb::PlanCandidate> out;
  std::set<std::string> seen;
  for (absl::string_view item : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
    std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    pb::PlanCandidate c;
    c.set_accelerator(std::string(absl::StripAsciiWhitespace(kv[0])));
    if (c.accelerator().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": an empty accelerator id"));
    }
    if (!seen.insert(c.accelerator()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": '", c.accelerator(), "' is given twice"));
    }
    if (kv.size() == 2) {
      double price = 0;
      if (!absl::SimpleAtod(kv[1], &price) || !std::isfinite(price) || price < 0) {
        return absl::InvalidArgumentError(absl::StrCat(flag, ": price '", kv[1], "' of '",
                                                       c.accelerator(),
                                                       "' is not a number >= 0 (per GPU-hour)"));
      }
      c.set_price_per_gpu_hour(price);
    }
    out.push_back(std::move(c));
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": no accelerator"));
  return out;
}

std::string FormatPlanTable(const pb::PlanRequest& request, const pb::PlanResponse& r, bool wide) {
  const bool priced = r.ranked_by_cost();
  std::string out = absl::StrFormat(
      "Plan: %s, %s tokens, %d accelerator(s); ranked by %s, options meeting the constraints "
      "first\n\n",
      request.workload().model().name().empty() ? "custom model"
                                                : request.workload().model().name(),
      Compact(request.tokens()), request.candidates_size(), priced ? "cost" : "GPU-hours");
  Table t({{"#"},
           {"accelerator", true},
           {"GPUs"},
           {"batch"},
           {"layout", true, true},
           {"tokens/s"},
           {"MFU", false, true},
           {"goodput"},
           {"days"},
           {"GPU-hours"},
           {"MWh", false, true},
           {"cost"},
           {"kW", false, true},
           {"", true}});
  int i = 0;
  for (const pb::PlanOption& o : r.options()) {
    t.AddRow({absl::StrCat(++i), o.accelerator(), absl::StrCat(o.num_gpus()),
              absl::StrCat(o.scenario().workload().global_batch()),
              LayoutShort(o.prediction().layout()), Compact(o.prediction().tokens_per_s()),
              Percent(o.prediction().mfu()), Percent(o.goodput()), Days(o.days()),
              Compact(o.gpu_hours()), Significant(o.energy_mwh(), 3),
              o.cost() > 0 ? Money(o.cost()) : "-", Thousands(o.facility_kw()), Flags(o)});
  }
  std::vector<std::string> dropped;
  out += t.Render("", wide ? 0 : kTableWidth, &dropped);
  if (!dropped.empty()) {
    absl::StrAppend(&out, "(", absl::StrJoin(dropped, ", "), " left out: --wide shows them)\n");
  }
  for (const pb::PlanOption& o : r.options()) {
    if (o.violations_size() == 0 || !o.top()) continue;
    absl::StrAppend(&out, "  ", o.accelerator(), " x ", o.num_gpus(), ": ",
                    absl::StrJoin(o.violations(), "; "), "\n");
  }
  const std::string warnings = OptionWarnings(r);
  if (!warnings.empty()) absl::StrAppend(&out, "\nWarnings\n", warnings);
  if (r.doublings_size() > 0) {
    out += "\nEach doubling (where returns diminish):\n";
    Table d({{"accelerator", true}, {"GPUs"}, {"speedup"}, {"extra cost"}, {"per day saved"}});
    for (const pb::PlanDoubling& x : r.doublings()) {
      d.AddRow({x.accelerator(), absl::StrCat(x.from_gpus(), " -> ", x.to_gpus()),
                absl::StrFormat("%.2fx", x.speedup()),
                priced ? Money(x.extra_cost()) : absl::StrCat(Compact(x.extra_cost()), " GPU-h"),
                priced ? Money(x.cost_per_day_saved())
                       : absl::StrCat(Compact(x.cost_per_day_saved()), " GPU-h")});
    }
    out += d.Render("  ");
  }
  if (r.warnings_size() > 0) {
    out += "\nAssumptions:\n";
    for (const std::string& w : r.warnings()) absl::StrAppend(&out, "  ", w, "\n");
  }
  absl::StrAppend(&out, "\nsearched ", r.stats().gpu_counts_evaluated(), " of ",
                  r.stats().gpu_counts_total(), " GPU counts, evaluated ",
                  Thousands(static_cast<double>(r.stats().layouts_evaluated())), " of ",
                  Thousands(static_cast<double>(r.stats().layouts_total())),
                  " layouts (the rest pruned by bounds or not fitting)\n");
  return out;
}

namespace {

// The plan CSV's columns: an option and its rank (1 = first).
using PlanColumn = CsvOutColumn<int, pb::PlanOption>;
PlanColumn Exact(std::string name, double (*get)(const pb::PlanOption&)) {
  return {std::move(name),
          [get](const int&, const pb::PlanOption& o) { return ExactDouble(get(o)); }};
}
PlanColumn Flag(std::string name, bool (pb::PlanOption::*get)() const) {
  return {std::move(name), [get](const int&, const pb::PlanOption& o) {
            return std::string((o.*get)() ? "true" : "false");
          }};
}
const std::vector<PlanColumn>& PlanColumns() {
  using O = const pb::PlanOption&;
  static const auto* columns = new std::vector<PlanColumn>{
      {"rank", [](const int& rank, O) { return absl::StrCat(rank); }},
      {"accelerator", [](const int&, O o) { return o.accelerator(); }},
      {"gpus", [](const int&, O o) { return absl::StrCat(o.num_gpus()); }},
      {"global_batch",
       [](const int&, O o) { return absl::StrCat(o.scenario().workload().global_batch()); }},
      {"layout", [](const int&, O o) { return LayoutShort(o.prediction().layout()); }},
      Exact("tokens_per_s", [](O o) { return o.prediction().tokens_per_s(); }),
      Exact("mfu", [](O o) { return o.prediction().mfu(); }),
      Exact("goodput", [](O o) { return o.goodput(); }),
      Exact("days", [](O o) { return o.days(); }),
      Exact("gpu_hours", [](O o) { return o.gpu_hours(); }),
      Exact("energy_mwh", [](O o) { return o.energy_mwh(); }),
      Exact("cost", [](O o) { return o.cost(); }),
      Exact("facility_kw", [](O o) { return o.facility_kw(); }),
      Flag("meets_constraints", &pb::PlanOption::meets_constraints),
      Flag("pareto", &pb::PlanOption::pareto),
      Flag("smallest", &pb::PlanOption::smallest),
      Flag("top", &pb::PlanOption::top),
      Exact("mtbf_s", [](O o) { return o.goodput_detail().mtbf_s(); }),
      Exact("checkpoint_interval_s",
            [](O o) { return o.goodput_detail().checkpoint_interval_s(); }),
      {"violations", [](const int&, O o) { return absl::StrJoin(o.violations(), "; "); }},
  };
  return *columns;
}

}  // namespace

std::string FormatPlanCsv(const pb::PlanResponse& r) {
  std::string out = CsvLine(CsvHeader(PlanColumns()));
  int rank = 0;
  for (const pb::PlanOption& o : r.options()) out += CsvLine(CsvCells(PlanColumns(), ++rank, o));
  return out;
}

namespace {

// What the plot's vertical axis shows of an option: its cost, or its GPU-hours when some
// candidate has no price.
double PlanMetric(const pb::PlanOption& o, bool priced) {
  return priced ? o.cost() : o.gpu_hours();
}

// The plan plot's page and its two log axes (whole decades around the data): days across, cost
// (or GPU-hours when some candidate has no price) up.
struct PlanFrame {
  static constexpr double kW = 760, kH = 460, kLeft = 90, kRight = 170, kTop = 50, kBottom = 60;
  bool priced = false;
  double lx0 = 0, lx1 = 1, ly0 = 0, ly1 = 1;  // log10 of the axes' ends

  double Metric(const pb::PlanOption& o) const { return PlanMetric(o, priced); }
  double Px(double days) const {
    return kLeft + (std::log10(days) - lx0) / (lx1 - lx0) * (kW - kLeft - kRight);
  }
  double Py(double v) const {
    return kH - kBottom - (std::log10(v) - ly0) / (ly1 - ly0) * (kH - kTop - kBottom);
  }
};

PlanFrame PlanFrameOf(const std::vector<const pb::PlanOption*>& points, bool priced) {
  PlanFrame f;
  f.priced = priced;
  double x0 = 1, x1 = 10, y0 = 1, y1 = 10;
  if (!points.empty()) {
    x0 = y0 = std::numeric_limits<double>::infinity();
    x1 = y1 = 0;
    for (const pb::PlanOption* o : points) {
      x0 = std::min(x0, o->days());
      x1 = std::max(x1, o->days());
      y0 = std::min(y0, f.Metric(*o));
      y1 = std::max(y1, f.Metric(*o));
    }
  }
  f.lx0 = std::floor(std::log10(x0));
  f.lx1 = std::max(f.lx0 + 1, std::ceil(std::log10(x1)));
  f.ly0 = std::floor(std::log10(y0));
  f.ly1 = std::max(f.ly0 + 1, std::ceil(std::log10(y1)));
  return f;
}

// One colour per accelerator, in the order the options name them.
std::map<std::string, std::string> ColoursOf(const pb::PlanResponse& r) {
  static const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                   "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
  std::map<std::string, std::string> colour;
  for (const pb::PlanOption& o : r.options()) {
    if (!colour.count(o.accelerator())) colour[o.accelerator()] = kColours[colour.size() % 8];
  }
  return colour;
}

// The axes with a grid line and a label at each decade, and the axis titles.
std::string PlanAxes(const PlanFrame& f) {
  using F = PlanFrame;
  std::string s = absl::StrFormat(
      "<g id=\"axes\" stroke=\"#333\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
      "y2=\"%.1f\"/><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
      F::kLeft, F::kH - F::kBottom, F::kW - F::kRight, F::kH - F::kBottom, F::kLeft, F::kTop,
      F::kLeft, F::kH - F::kBottom);
  for (double d = f.lx0; d <= f.lx1; ++d) {
    const double x = f.Px(std::pow(10, d));
    absl::StrAppendFormat(&s,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                          x, F::kTop, x, F::kH - F::kBottom, x, F::kH - F::kBottom + 18,
                          Significant(std::pow(10, d), 3));
  }
  for (double d = f.ly0; d <= f.ly1; ++d) {
    const double y = f.Py(std::pow(10, d));
    absl::StrAppendFormat(&s,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                          F::kLeft, y, F::kW - F::kRight, y, F::kLeft - 6, y + 4,
                          f.priced ? Money(std::pow(10, d)) : Compact(std::pow(10, d)));
  }
  absl::StrAppendFormat(&s,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">days of wall clock "
                        "(failures and checkpoints included)</text>\n"
                        "<text x=\"20\" y=\"%.1f\" transform=\"rotate(-90 20 %.1f)\" "
                        "text-anchor=\"middle\">%s</text>\n",
                        (F::kLeft + F::kW - F::kRight) / 2, F::kH - 16,
                        (F::kTop + F::kH - F::kBottom) / 2, (F::kTop + F::kH - F::kBottom) / 2,
                        f.priced ? "cost" : "GPU-hours");
  return s;
}

// The Pareto front, by days, as a dashed line.
std::string ParetoLine(const std::vector<const pb::PlanOption*>& points, const PlanFrame& f) {
  std::vector<const pb::PlanOption*> front;
  for (const pb::PlanOption* o : points) {
    if (o->pareto()) front.push_back(o);
  }
  if (front.empty()) return "";
  std::sort(front.begin(), front.end(),
            [](const pb::PlanOption* a, const pb::PlanOption* b) { return a->days() < b->days(); });
  std::string s =
      "<polyline id=\"pareto\" fill=\"none\" stroke=\"#555\" stroke-dasharray=\"4 3\" points=\"";
  for (const pb::PlanOption* o : front) {
    absl::StrAppendFormat(&s, "%.1f,%.1f ", f.Px(o->days()), f.Py(f.Metric(*o)));
  }
  return s + "\"/>\n";
}

// Each option: a circle (larger on the front, faint where it misses a constraint), its GPU count
// beside it, and a tooltip.
std::string OptionMarks(const std::vector<const pb::PlanOption*>& points, const PlanFrame& f,
                        const std::map<std::string, std::string>& colour) {
  std::string s;
  for (const pb::PlanOption* o : points) {
    const std::string& c = colour.at(o->accelerator());
    const double x = f.Px(o->days()), y = f.Py(f.Metric(*o));
    absl::StrAppendFormat(
        &s,
        "<g class=\"option\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\" "
        "fill-opacity=\"%s\" stroke=\"%s\"/><title>%s x %d: %s days, %s%s</title>"
        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" fill=\"%s\">%d</text></g>\n",
        x, y, o->pareto() ? 5 : 3, c, o->meets_constraints() ? "0.9" : "0.25", c,
        XmlEscape(o->accelerator()), o->num_gpus(), Days(o->days()),
        f.priced ? Money(o->cost()) : Compact(o->gpu_hours()) + " GPU-hours",
        o->pareto() ? ", Pareto" : "", x + 6, y - 4, c, o->num_gpus());
  }
  return s;
}

std::string PlanLegend(const std::map<std::string, std::string>& colour) {
  using F = PlanFrame;
  std::string s;
  double ly = F::kTop + 10;
  for (const auto& [acc, c] : colour) {
    absl::StrAppendFormat(
        &s,
        "<g class=\"legend\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/>"
        "<text x=\"%.1f\" y=\"%.1f\">%s</text></g>\n",
        F::kW - F::kRight + 16, ly, c, F::kW - F::kRight + 26, ly + 4, XmlEscape(acc));
    ly += 18;
  }
  absl::StrAppendFormat(&s,
                        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#555\">faint: misses "
                        "a constraint</text>\n",
                        F::kW - F::kRight + 10, ly + 10);
  return s;
}

}  // namespace

std::string RenderPlanSvg(const std::string& title, const pb::PlanResponse& r) {
  std::vector<const pb::PlanOption*> points;
  for (const pb::PlanOption& o : r.options()) {
    if (std::isfinite(o.days()) && o.days() > 0 && PlanMetric(o, r.ranked_by_cost()) > 0) {
      points.push_back(&o);
    }
  }
  const PlanFrame frame = PlanFrameOf(points, r.ranked_by_cost());
  const std::map<std::string, std::string> colour = ColoursOf(r);
  std::string s = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"24\" font-size=\"15\">%s</text>\n",
      PlanFrame::kW, PlanFrame::kH, PlanFrame::kW, PlanFrame::kH, PlanFrame::kLeft,
      XmlEscape(title));
  s += PlanAxes(frame) + ParetoLine(points, frame) + OptionMarks(points, frame, colour) +
       PlanLegend(colour) + "</svg>\n";
  return s;
}

namespace {

// The flags a plan cannot go without.
absl::Status CheckPlanRequired(const Invocation& inv, const pb::Scenario& sc) {
  std::vector<std::string> missing;
  if (sc.workload().model().name().empty() && sc.workload().model().layers() == 0) {
    missing.push_back("--model");
  }
  if (sc.workload().seq_len() == 0) missing.push_back("--seq");
  if (!inv.args.Has("tokens")) missing.push_back("--tokens");
  if (!inv.args.Has("accelerators") && !inv.args.Has("accelerator")) {
    missing.push_back("--accelerators");
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      absl::StrJoin(missing, ", "), missing.size() == 1 ? " is" : " are", " required"));
}

// --accelerator's candidate, first, with PlanCandidate's flags (--price), then --accelerators';
// each with --gpus, the scenario's layout and cluster fields (the node size and the network), and
// --accelerator-spec for --accelerator's part, else for each --accelerators entry.
absl::StatusOr<std::vector<pb::PlanCandidate>> PlanCandidates(const Invocation& inv,
                                                              const pb::Scenario& sc) {
  std::vector<pb::PlanCandidate> candidates;
  if (const std::string* v = inv.args.Last("accelerators")) {
    ASSIGN_OR_RETURN(candidates, ParseCandidates("--accelerators", *v));
  }
  const std::string* single = inv.args.Last("accelerator");
  if (single != nullptr) {
    pb::PlanCandidate c;
    c.set_accelerator(*single);
    candidates.insert(candidates.begin(), c);
  }
  for (const FieldFlag& f : PlanCandidateFields()) {
    const std::string* v = inv.args.Last(f.ui->flag());
    if (v == nullptr) continue;
    if (single == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("--", f.ui->flag(),
                                                     ": applies to --accelerator, which is not "
                                                     "given (--accelerators takes ID=PRICE)"));
    }
    RETURN_IF_ERROR(ApplyField(f, *v, &candidates.front()));
  }
  std::vector<int64_t> counts;
  if (const std::string* v = inv.args.Last("gpus")) {
    ASSIGN_OR_RETURN(counts, ParseIntList("--gpus", *v, 1, std::numeric_limits<int32_t>::max()));
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    pb::PlanCandidate& c = candidates[i];
    if (sc.cluster().has_accelerator_spec() && (single == nullptr || i == 0)) {
      *c.mutable_accelerator_spec() = sc.cluster().accelerator_spec();
    }
    for (int64_t g : counts) c.add_gpu_counts(static_cast<int32_t>(g));
    *c.mutable_layout() = sc.parallelism();
    c.set_gpus_per_node(sc.cluster().gpus_per_node());
    c.set_inter_node_gbps_per_gpu(sc.cluster().inter_node_gbps_per_gpu());
    c.set_inter_node_latency_us(sc.cluster().inter_node_latency_us());
  }
  return candidates;
}

// The request the flags describe: the scenario's workload and stack, Plan's own fields (each a
// flag the proto declares: scenario_fields.h PlanFields) and the candidates.
absl::StatusOr<pb::PlanRequest> BuildPlanRequest(const Invocation& inv) {
  ASSIGN_OR_RETURN(const std::vector<pb::Scenario> scenarios,
                   BuildScenarios(inv.args, false, {"gpus", "accelerator"}));
  const pb::Scenario& sc = scenarios.front();
  RETURN_IF_ERROR(CheckPlanRequired(inv, sc));
  pb::PlanRequest req;
  *req.mutable_workload() = sc.workload();
  req.set_framework(sc.framework());
  *req.mutable_stack() = sc.stack();
  req.set_calibration(sc.calibration());
  for (const FieldFlag& f : PlanFields()) {
    if (const std::string* v = inv.args.Last(f.ui->flag()))
      RETURN_IF_ERROR(ApplyField(f, *v, &req));
  }
  ASSIGN_OR_RETURN(const std::vector<pb::PlanCandidate> candidates, PlanCandidates(inv, sc));
  for (const pb::PlanCandidate& c : candidates) *req.add_candidates() = c;
  if (sc.cluster().has_hbm_headroom()) req.set_hbm_headroom(sc.cluster().hbm_headroom());
  return req;
}

// The plan's last response (progress lines drawn on a terminal's stderr while it searches).
grpc::Status StreamPlan(const Invocation& inv, Client& client, const pb::PlanRequest& req,
                        pb::PlanResponse* last) {
  grpc::ClientContext ctx;
  client.Prepare(&ctx);
  std::unique_ptr<grpc::ClientReader<pb::PlanResponse>> reader = client.stub()->Plan(&ctx, req);
  pb::PlanResponse msg;
  bool drew = false;
  while (reader->Read(&msg)) {
    if (msg.has_progress() && msg.options_size() == 0) {
      if (inv.env.stderr_is_tty) {
        inv.err << "\r"
                << "searching GPU counts: " << msg.progress().evaluated_count() << "/"
                << msg.progress().total_count() << std::flush;
        drew = true;
      }
    } else {
      *last = msg;
    }
  }
  if (drew) inv.err << "\r" << std::string(60, ' ') << "\r" << std::flush;
  return reader->Finish();
}

absl::Status WritePlanSvg(const pb::PlanRequest& req, const pb::PlanResponse& plan,
                          const std::string& path) {
  const std::string title = absl::StrCat(
      req.workload().model().name().empty() ? "custom model" : req.workload().model().name(),
      " on ", Compact(req.tokens()), " tokens: days against cost");
  return WriteOutput("svg", path, RenderPlanSvg(title, plan));
}

}  // namespace

int PlanCommand(const Invocation& inv) {
  absl::StatusOr<pb::PlanRequest> req = BuildPlanRequest(inv);
  if (!req.ok()) return UsageError(inv, req.status());
  absl::StatusOr<const std::string*> svg = OutputPath(inv, "svg");
  if (!svg.ok()) return UsageError(inv, svg.status());
  auto client = Client::Connect(inv.options);
  if (!client.ok()) return UsageError(inv, client.status());
  pb::PlanResponse plan;
  if (grpc::Status st = StreamPlan(inv, **client, *req, &plan); !st.ok()) {
    return RpcError(inv, st);
  }
  switch (inv.options.format) {
    case OutputFormat::kJson:
      inv.out << ToJson(plan);
      break;
    case OutputFormat::kCsv:
      inv.out << FormatPlanCsv(plan);
      break;
    case OutputFormat::kTable:
      inv.out << FormatPlanTable(*req, plan, inv.options.wide);
      break;
  }
  if (*svg != nullptr) {
    if (absl::Status st = WritePlanSvg(*req, plan, **svg); !st.ok()) return UsageError(inv, st);
    (inv.options.format == OutputFormat::kTable ? inv.out : inv.err) << "wrote " << **svg << "\n";
  }
  return kExitOk;
}

}  // namespace scalecast::cli
