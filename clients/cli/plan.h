// `scalecast plan`: the Plan call (time to train, cost and failures across accelerators), its
// table, CSV and an SVG of days against cost. The formatters take the last message only, so tests
// check them without a server.
#ifndef SCALECAST_CLIENTS_CLI_PLAN_H_
#define SCALECAST_CLIENTS_CLI_PLAN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/cli/commands.h"
#include "proto/scalecast/v1/scalecast.pb.h"

namespace scalecast::cli {

// "h100-sxm-80gb=2.5,b200-sxm-180gb" -> candidates with prices (0 when not given).
absl::StatusOr<std::vector<pb::PlanCandidate>> ParseCandidates(const std::string& flag,
                                                               const std::string& value);

std::string FormatPlanTable(const pb::PlanRequest& request, const pb::PlanResponse& response,
                            bool wide);
std::string FormatPlanCsv(const pb::PlanResponse& response);
// Days (x, log) against cost (y, log; GPU-hours when unpriced): one <g class="option"> per option,
// coloured by accelerator, the Pareto front joined by a line (<polyline id="pareto">).
std::string RenderPlanSvg(const std::string& title, const pb::PlanResponse& response);

int PlanCommand(const Invocation& inv);

}  // namespace scalecast::cli

#endif  // SCALECAST_CLIENTS_CLI_PLAN_H_
