#include "clients/cli/plot.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "clients/cli/format.h"
#include "clients/cli/table.h"

namespace scalecast::cli {
namespace {

// Page geometry (px). The right margin holds the per-GPU axis.
constexpr double kWidth = 980, kHeight = 800;
constexpr double kLeft = 100, kRight = kWidth - 110;
constexpr double kTopY0 = 112, kTopY1 = 450;  // throughput panel plot area
constexpr double kBotY0 = 545, kBotY1 = 735;  // energy panel plot area
constexpr double kInnerPad = 56;              // first/last point inset from the frame
constexpr double kCharWidth = 0.6;            // average glyph width per px of font size

const char* kFont = "DejaVu Sans, Arial, Helvetica, sans-serif";
const char* kBlue = "#1a73e8";
const char* kOrange = "#e8710a";
const char* kGreen = "#188038";
const char* kRed = "#d93025";
const char* kGrid = "#e3e3e3";
const char* kInk = "#202124";
const char* kMuted = "#5f6368";

std::string N(double v) { return absl::StrFormat("%.1f", v); }

std::string Text(double x, double y, const std::string& s, double size, const std::string& anchor,
                 const std::string& fill, const std::string& extra = "") {
  return absl::StrCat("<text x=\"", N(x), "\" y=\"", N(y), "\" font-size=\"", N(size),
                      "\" text-anchor=\"", anchor, "\" fill=\"", fill, "\"", extra, ">",
                      XmlEscape(s), "</text>\n");
}

std::string Line(double x1, double y1, double x2, double y2, const std::string& stroke,
                 double width, const std::string& extra = "") {
  return absl::StrCat("<line x1=\"", N(x1), "\" y1=\"", N(y1), "\" x2=\"", N(x2), "\" y2=\"", N(y2),
                      "\" stroke=\"", stroke, "\" stroke-width=\"", N(width), "\"", extra, "/>\n");
}

double NiceStep(double raw) {
  if (!(raw > 0)) return 1;
  const double e = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / e;
  const double nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
  return nice * e;
}

// Enough decimals to tell ticks `step` apart.
std::string TickLabel(double v, double step) {
  int d = 0;
  while (d < 6) {
    const double scaled = step * std::pow(10.0, d);
    if (std::fabs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) break;
    ++d;
  }
  return Fixed(v, d);
}

struct XAxis {
  double lo = 0, hi = 1;
  double operator()(int gpus) const {
    const double t = hi > lo ? (std::log2(static_cast<double>(gpus)) - lo) / (hi - lo) : 0.5;
    return kLeft + kInnerPad + t * (kRight - kLeft - 2 * kInnerPad);
  }
};

// Vertical grid, tick marks and labels at the GPU counts, then the axis title.
std::string DrawXAxis(const XAxis& x, const std::vector<PlotPoint>& points, double y0, double y1) {
  std::string out;
  double last = -1e9;
  for (const PlotPoint& p : points) {
    const double px = x(p.gpus);
    out += Line(px, y0, px, y1, kGrid, 1);
    out += Line(px, y1, px, y1 + 5, kInk, 1);
    const std::string label = absl::StrCat(p.gpus);
    if (px - last >= 36) {
      out += Text(px, y1 + 19, label, 12, "middle", kInk);
      last = px;
    }
  }
  out += Text((kLeft + kRight) / 2, y1 + 40, "GPUs (log2 scale)", 13, "middle", kInk);
  return out;
}

// A left or right value axis with `n` intervals of `step` from `lo`; labels via `fmt`.
template <typename Fmt>
std::string DrawYAxis(bool left, double lo, double step, int n, double y0, double y1,
                      const std::string& color, bool grid, Fmt fmt) {
  std::string out;
  const double x = left ? kLeft : kRight;
  out += Line(x, y0, x, y1, color, 1.2);
  for (int i = 0; i <= n; ++i) {
    const double y = y1 - (y1 - y0) * i / n;
    if (grid && i > 0) out += Line(kLeft, y, kRight, y, kGrid, 1);
    out += Line(x, y, left ? x - 5 : x + 5, y, color, 1);
    out += Text(left ? x - 8 : x + 8, y + 4, fmt(lo + step * i), 12, left ? "end" : "start", color);
  }
  return out;
}

std::string AxisTitle(double x, double y, const std::string& s, const std::string& color) {
  return Text(x, y, s, 13, "middle", color,
              absl::StrCat(" transform=\"rotate(-90 ", N(x), " ", N(y), ")\""));
}

std::string Polyline(const std::vector<std::pair<double, double>>& xy, const std::string& color) {
  std::vector<std::string> pts;
  for (const auto& [x, y] : xy) pts.push_back(absl::StrCat(N(x), ",", N(y)));
  return absl::StrCat("<polyline points=\"", absl::StrJoin(pts, " "), "\" fill=\"none\" stroke=\"",
                      color, "\" stroke-width=\"2.2\" stroke-linejoin=\"round\"/>\n");
}

// The layout in two lines: degrees ("tp2 pp4 cp2"), then the rest ("fsdp mb4 sel").
std::pair<std::string, std::string> SplitLayout(const std::string& layout) {
  std::vector<std::string> degrees, rest;
  for (absl::string_view w : absl::StrSplit(layout, ' ', absl::SkipEmpty())) {
    const bool degree = absl::StartsWith(w, "tp") || absl::StartsWith(w, "pp") ||
                        absl::StartsWith(w, "vpp") || absl::StartsWith(w, "cp");
    (degree ? degrees : rest).emplace_back(w);
  }
  return {absl::StrJoin(degrees, " "), absl::StrJoin(rest, " ")};
}

}  // namespace

std::vector<PlotPoint> PlotPointsFromSweep(const std::vector<scalecast::v1::SweepResult>& results) {
  std::vector<PlotPoint> out;
  for (const scalecast::v1::SweepResult& r : results) {
    if (!r.has_best() || r.gpu_count() <= 0) continue;
    PlotPoint p;
    p.gpus = r.gpu_count();
    p.tokens_per_s = r.best().tokens_per_s();
    p.tokens_per_s_per_gpu = r.best().tokens_per_s_per_gpu();
    p.joules_per_token = r.best().power().joules_per_token();
    p.layout = LayoutShort(r.best().layout());
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(),
            [](const PlotPoint& a, const PlotPoint& b) { return a.gpus < b.gpus; });
  return out;
}

namespace {

std::string SvgHeader(const std::string& title) {
  return absl::StrCat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", kWidth, "\" height=\"", kHeight,
      "\" viewBox=\"0 0 ", kWidth, " ", kHeight, "\" font-family=\"", kFont, "\">\n",
      "<rect x=\"0\" y=\"0\" width=\"", kWidth, "\" height=\"", kHeight, "\" fill=\"#ffffff\"/>\n",
      Text(kWidth / 2, 32, title, 18, "middle", kInk, " font-weight=\"bold\""),
      Text(kWidth / 2, 54,
           "Best layout per GPU count (scalecast sweep); each point is named by its layout", 12,
           "middle", kMuted));
}

std::string Legend(int diminishing_gpus) {
  double lx = kLeft;
  const double ly = 84;
  std::string out = "<g id=\"legend\">\n";
  out += Line(lx, ly, lx + 26, ly, kBlue, 2.2);
  out += absl::StrCat("<circle cx=\"", N(lx + 13), "\" cy=\"", N(ly), "\" r=\"4.5\" fill=\"", kBlue,
                      "\"/>\n");
  out += Text(lx + 32, ly + 4, "total tokens/s (left axis)", 12, "start", kInk);
  lx += 230;
  out += Line(lx, ly, lx + 26, ly, kOrange, 2.2);
  out += absl::StrCat("<rect x=\"", N(lx + 9), "\" y=\"", N(ly - 4),
                      "\" width=\"8\" height=\"8\" "
                      "fill=\"",
                      kOrange, "\"/>\n");
  out += Text(lx + 32, ly + 4, "tokens/s per GPU (right axis)", 12, "start", kInk);
  if (diminishing_gpus > 0) {
    lx += 250;
    out += Line(lx, ly, lx + 26, ly, kRed, 1.6, " stroke-dasharray=\"5,4\"");
    out += Text(lx + 32, ly + 4, "diminishing returns", 12, "start", kInk);
  }
  out += "</g>\n";
  return out;
}

std::string PanelFrame(double y0, double y1) {
  return absl::StrCat("<rect x=\"", N(kLeft), "\" y=\"", N(y0), "\" width=\"", N(kRight - kLeft),
                      "\" height=\"", N(y1 - y0), "\" fill=\"none\" stroke=\"#bdc1c6\"/>\n");
}

std::string DiminishingLine(double dx, double y0, double y1) {
  return Line(dx, y0, dx, y1, kRed, 1.6, " class=\"diminishing\" stroke-dasharray=\"5,4\"");
}

// Layout labels: each beside its total marker, at the first candidate spot that stays inside
// the top panel and covers no marker and no earlier label.
class LabelPlacer {
 public:
  LabelPlacer(const std::vector<std::pair<double, double>>& total_xy,
              const std::vector<std::pair<double, double>>& per_xy) {
    for (size_t i = 0; i < total_xy.size(); ++i) {
      for (const auto& [mx, my] : {total_xy[i], per_xy[i]}) {
        markers_.push_back({mx - 6, my - 6, mx + 6, my + 6});
      }
    }
  }

  // The label of the marker at (px, py): its background, its two lines and, set off from the
  // point, a leader line.
  std::string Place(double px, double py, const std::string& layout) {
    const auto [line1, line2] = SplitLayout(layout);
    const double font = 10.5;
    const double w =
        kCharWidth * font * static_cast<double>(std::max(line1.size(), line2.size())) + 8;
    const double h = 2 * (font + 2) + 4;
    const double lx = std::clamp(px, kLeft + w / 2 + 2, kRight - w / 2 - 2);
    double best_top = 0, best_cost = 1e18;
    const double candidates[] = {py - 10 - h, py + 10, py - 16 - 2 * h, py + 16 + h};
    for (size_t c = 0; c < 4; ++c) {
      const double top = candidates[c];
      const Box box{lx - w / 2, top, lx + w / 2, top + h};
      double cost = static_cast<double>(c);  // prefer the earlier candidates
      if (top < kTopY0 + 2 || top + h > kTopY1 - 2) cost += 1e6;
      for (const Box& b : placed_) cost += box.Overlaps(b) ? 1e4 : 0;
      for (const Box& m : markers_) cost += box.Overlaps(m) ? 100 : 0;
      if (cost < best_cost) {
        best_cost = cost;
        best_top = top;
      }
    }
    const double top = best_top;
    placed_.push_back({lx - w / 2, top, lx + w / 2, top + h});
    std::string out;
    const bool above = top + h <= py;
    const double gap = above ? py - (top + h) : top - py;
    if (gap > 14) {
      out += Line(px, above ? py - 6 : py + 6, lx, above ? top + h : top, "#9aa0a6", 1,
                  " class=\"leader\"");
    }
    out += absl::StrCat("<rect class=\"label-bg\" x=\"", N(lx - w / 2), "\" y=\"", N(top),
                        "\" width=\"", N(w), "\" height=\"", N(h),
                        "\" rx=\"3\" fill=\"#ffffff\" fill-opacity=\"0.9\" stroke=\"#dadce0\"/>\n");
    out += Text(lx, top + font + 1.5, line1, font, "middle", kInk, " class=\"layout\"");
    out += Text(lx, top + 2 * font + 4, line2, font, "middle", kInk, " class=\"layout\"");
    return out;
  }

 private:
  struct Box {
    double x0, y0, x1, y1;
    bool Overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
  };
  std::vector<Box> markers_, placed_;
};

// Top panel: total tokens/s (left axis) and tokens/s per GPU (right axis), each point labelled
// with its layout.
std::string ThroughputPanel(const std::vector<PlotPoint>& points, const XAxis& x,
                            int diminishing_gpus) {
  std::string out = "<g id=\"panel-throughput\">\n";
  out += PanelFrame(kTopY0, kTopY1);
  double max_total = 0, max_per_gpu = 0;
  for (const PlotPoint& p : points) {
    max_total = std::max(max_total, p.tokens_per_s);
    max_per_gpu = std::max(max_per_gpu, p.tokens_per_s_per_gpu);
  }
  // Headroom above the highest point for its layout label.
  const double step_l = NiceStep(std::max(max_total, 1.0) * 1.18 / 5);
  const int n = std::max(1, static_cast<int>(std::ceil(std::max(max_total, 1.0) * 1.18 / step_l)));
  const double step_r = NiceStep(std::max(max_per_gpu, 1.0) * 1.18 / n);
  const double top_l = step_l * n, top_r = step_r * n;
  out += DrawYAxis(true, 0, step_l, n, kTopY0, kTopY1, kBlue, true,
                   [](double v) { return Compact(v); });
  out += DrawYAxis(false, 0, step_r, n, kTopY0, kTopY1, kOrange, false,
                   [](double v) { return Compact(v); });
  out += DrawXAxis(x, points, kTopY0, kTopY1);
  out += AxisTitle(30, (kTopY0 + kTopY1) / 2, "total tokens/s", kBlue);
  out += AxisTitle(kWidth - 24, (kTopY0 + kTopY1) / 2, "tokens/s per GPU", kOrange);
  auto y_total = [&](double v) { return kTopY1 - (kTopY1 - kTopY0) * v / top_l; };
  auto y_per = [&](double v) { return kTopY1 - (kTopY1 - kTopY0) * v / top_r; };
  std::vector<std::pair<double, double>> total_xy, per_xy;
  for (const PlotPoint& p : points) {
    total_xy.emplace_back(x(p.gpus), y_total(p.tokens_per_s));
    per_xy.emplace_back(x(p.gpus), y_per(p.tokens_per_s_per_gpu));
  }
  if (points.size() > 1) {
    out += Polyline(total_xy, kBlue);
    out += Polyline(per_xy, kOrange);
  }
  if (diminishing_gpus > 0 && !points.empty()) {
    const double dx = x(diminishing_gpus);
    out += DiminishingLine(dx, kTopY0, kTopY1);
    out +=
        Text(dx, kTopY0 - 6, absl::StrCat("diminishing returns from ", diminishing_gpus, " GPUs"),
             11, dx > kRight - 120 ? "end" : (dx < kLeft + 120 ? "start" : "middle"), kRed);
  }
  LabelPlacer labels(total_xy, per_xy);
  for (size_t i = 0; i < points.size(); ++i) {
    const PlotPoint& p = points[i];
    const auto [px, py] = total_xy[i];
    const double qy = per_xy[i].second;
    out += absl::StrCat("<g class=\"point\" data-gpus=\"", p.gpus, "\">\n");
    out += absl::StrCat("<title>", p.gpus, " GPUs: ", XmlEscape(p.layout), ", ",
                        Thousands(p.tokens_per_s), " tokens/s, ",
                        Thousands(p.tokens_per_s_per_gpu, 1), " per GPU</title>\n");
    out += absl::StrCat("<circle cx=\"", N(px), "\" cy=\"", N(py), "\" r=\"5\" fill=\"", kBlue,
                        "\" stroke=\"#ffffff\" stroke-width=\"1.5\"/>\n");
    out += absl::StrCat("<rect x=\"", N(px - 4.5), "\" y=\"", N(qy - 4.5),
                        "\" width=\"9\" height=\"9\" fill=\"", kOrange,
                        "\" stroke=\"#ffffff\" stroke-width=\"1.5\"/>\n");
    out += labels.Place(px, py, p.layout);
    out += "</g>\n";
  }
  out += "</g>\n";
  return out;
}

// Bottom panel: joules per token, each point with its value.
std::string EnergyPanel(const std::vector<PlotPoint>& points, const XAxis& x,
                        int diminishing_gpus) {
  std::string out = "<g id=\"panel-energy\">\n";
  out += Text(kLeft, kBotY0 - 12, "Energy per token (best layout)", 14, "start", kInk,
              " font-weight=\"bold\"");
  out += PanelFrame(kBotY0, kBotY1);
  double jmin = 0, jmax = 1;
  if (!points.empty()) {
    jmin = jmax = points.front().joules_per_token;
    for (const PlotPoint& p : points) {
      jmin = std::min(jmin, p.joules_per_token);
      jmax = std::max(jmax, p.joules_per_token);
    }
  }
  double span = jmax - jmin;
  if (span <= std::max(1e-12, jmax * 1e-3)) span = std::max(jmax * 0.2, 1e-3);
  double lo = jmin - 0.15 * span, hi = jmax + 0.3 * span;  // room for value labels on top
  const double step_j = NiceStep((hi - lo) / 4);
  lo = std::max(0.0, std::floor(lo / step_j) * step_j);
  hi = std::ceil(hi / step_j) * step_j;
  const int nj = std::max(1, static_cast<int>(std::lround((hi - lo) / step_j)));
  hi = lo + nj * step_j;
  out += DrawYAxis(true, lo, step_j, nj, kBotY0, kBotY1, kInk, true,
                   [step_j](double v) { return TickLabel(v, step_j); });
  out += DrawXAxis(x, points, kBotY0, kBotY1);
  out += AxisTitle(30, (kBotY0 + kBotY1) / 2, "joules per token", kGreen);
  auto y_j = [&](double v) { return kBotY1 - (kBotY1 - kBotY0) * (v - lo) / (hi - lo); };
  if (diminishing_gpus > 0 && !points.empty()) {
    out += DiminishingLine(x(diminishing_gpus), kBotY0, kBotY1);
  }
  std::vector<std::pair<double, double>> j_xy;
  for (const PlotPoint& p : points) j_xy.emplace_back(x(p.gpus), y_j(p.joules_per_token));
  if (points.size() > 1) out += Polyline(j_xy, kGreen);
  for (size_t i = 0; i < points.size(); ++i) {
    const auto [px, py] = j_xy[i];
    out += absl::StrCat("<g class=\"point\" data-gpus=\"", points[i].gpus, "\">\n");
    out +=
        absl::StrCat("<title>", points[i].gpus,
                     " GPUs: ", Significant(points[i].joules_per_token, 3), " J/token</title>\n");
    out += absl::StrCat("<circle cx=\"", N(px), "\" cy=\"", N(py), "\" r=\"5\" fill=\"", kGreen,
                        "\" stroke=\"#ffffff\" stroke-width=\"1.5\"/>\n");
    out += Text(px, py - 10, Significant(points[i].joules_per_token, 3), 10.5, "middle", kMuted,
                " stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\"");
    out += "</g>\n";
  }
  if (points.empty()) {
    out += Text((kLeft + kRight) / 2, (kBotY0 + kBotY1) / 2, "no feasible layout", 14, "middle",
                kMuted);
  }
  out += "</g>\n";
  return out;
}

}  // namespace

std::string RenderScalingSvg(const std::string& title, const std::vector<PlotPoint>& points,
                             int diminishing_gpus) {
  XAxis x;
  if (!points.empty()) {
    x.lo = std::log2(static_cast<double>(points.front().gpus));
    x.hi = std::log2(static_cast<double>(points.back().gpus));
  }
  return absl::StrCat(SvgHeader(title), Legend(diminishing_gpus),
                      ThroughputPanel(points, x, diminishing_gpus),
                      EnergyPanel(points, x, diminishing_gpus), "</svg>\n");
}

}  // namespace scalecast::cli
