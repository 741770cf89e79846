// The sweep's scaling plot as a self-contained SVG document (no libraries, no scripts).
#ifndef SCALECAST_CLIENTS_CLI_PLOT_H_
#define SCALECAST_CLIENTS_CLI_PLOT_H_

#include <string>
#include <vector>

#include "proto/scalecast/v1/scalecast.pb.h"

namespace scalecast::cli {

struct PlotPoint {
  int gpus = 0;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double joules_per_token = 0;
  std::string layout;  // "tp2 pp1 fsdp mb4"
};

// One point per SweepResult with a feasible best layout, by ascending GPU count.
std::vector<PlotPoint> PlotPointsFromSweep(const std::vector<scalecast::v1::SweepResult>& results);

// Two panels over a log2 GPU-count axis: <g id="panel-throughput"> (total tokens/s on the left
// axis, tokens/s per GPU on the right, the best layout named at each point) and
// <g id="panel-energy"> (joules per token). Each panel has one <g class="point"> per GPU count.
// `diminishing_gpus` > 0 draws a dashed marker at that count.
std::string RenderScalingSvg(const std::string& title, const std::vector<PlotPoint>& points,
                             int diminishing_gpus);

}  // namespace scalecast::cli

#endif  // SCALECAST_CLIENTS_CLI_PLOT_H_
