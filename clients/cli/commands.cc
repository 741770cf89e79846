#include "clients/cli/commands.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "clients/cli/cli.h"
#include "clients/cli/format.h"
#include "clients/cli/plan.h"
#include "clients/cli/plot.h"
#include "clients/cli/table.h"
#include "model/limits.h"
#include "model/status_macros.h"

namespace scalecast::cli {
namespace {

// Prints `response` as JSON, CSV or a table, whichever was asked.
template <typename Msg, typename TableFn, typename CsvFn>
void Print(const Invocation& inv, const Msg& response, TableFn table, CsvFn csv) {
  switch (inv.options.format) {
    case OutputFormat::kJson:
      inv.out << ToJson(response);
      break;
    case OutputFormat::kCsv:
      inv.out << csv();
      break;
    case OutputFormat::kTable:
      inv.out << table();
      break;
  }
}

absl::StatusOr<std::unique_ptr<Client>> Connect(const Invocation& inv) {
  return Client::Connect(inv.options);
}

int Predict(const Invocation& inv) {
  absl::StatusOr<std::vector<pb::Scenario>> scenarios = BuildScenarios(inv.args, false);
  if (!scenarios.ok()) return UsageError(inv, scenarios.status());
  if (absl::Status st = CheckRequired(*scenarios, true); !st.ok()) return UsageError(inv, st);
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  pb::PredictRequest req;
  *req.mutable_scenario() = scenarios->front();
  pb::PredictResponse resp;
  grpc::ClientContext ctx;
  (*client)->Prepare(&ctx);
  grpc::Status st = (*client)->stub()->Predict(&ctx, req, &resp);
  if (!st.ok()) return RpcError(inv, st);
  Print(
      inv, resp, [&] { return FormatPredictTable(req.scenario(), resp); },
      [&] { return FormatPredictCsv(req.scenario(), resp); });
  return kExitOk;
}

int Compare(const Invocation& inv) {
  absl::StatusOr<std::vector<pb::Scenario>> scenarios = BuildScenarios(inv.args, true);
  if (!scenarios.ok()) return UsageError(inv, scenarios.status());
  if (absl::Status st = CheckRequired(*scenarios, true); !st.ok()) return UsageError(inv, st);
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  pb::CompareRequest req;
  for (const pb::Scenario& s : *scenarios) *req.add_scenarios() = s;
  pb::CompareResponse resp;
  grpc::ClientContext ctx;
  (*client)->Prepare(&ctx);
  grpc::Status st = (*client)->stub()->Compare(&ctx, req, &resp);
  if (!st.ok()) return RpcError(inv, st);
  Print(
      inv, resp, [&] { return FormatCompareTable(*scenarios, resp, inv.options.wide); },
      [&] { return FormatCompareCsv(*scenarios, resp); });
  return kExitOk;
}

// --gpus: the counts swept, each once; the first is the base scenario's.
absl::Status SetSweptCounts(const std::string& flag, pb::SweepRequest* req) {
  ASSIGN_OR_RETURN(const std::vector<int64_t> counts,
                   ParseIntList("--gpus", flag, 1, std::numeric_limits<int32_t>::max()));
  std::set<int64_t> seen;
  for (int64_t g : counts) {
    if (!seen.insert(g).second) {
      return absl::InvalidArgumentError(absl::StrCat("--gpus: ", g, " is given twice"));
    }
    req->add_gpu_counts(static_cast<int32_t>(g));
  }
  req->mutable_base()->mutable_cluster()->set_num_gpus(static_cast<int32_t>(counts.front()));
  return absl::OkStatus();
}

// The sweep's request from the flags: the base scenario, --gpus, --top-k, --objective,
// --max-layouts and --refresh.
absl::StatusOr<pb::SweepRequest> BuildSweepRequest(const Invocation& inv) {
  ASSIGN_OR_RETURN(const std::vector<pb::Scenario> scenarios,
                   BuildScenarios(inv.args, false, {"gpus"}));
  RETURN_IF_ERROR(CheckRequired(scenarios, !inv.args.Has("gpus")));
  pb::SweepRequest req;
  *req.mutable_base() = scenarios.front();
  if (const std::string* v = inv.args.Last("gpus")) RETURN_IF_ERROR(SetSweptCounts(*v, &req));
  if (const std::string* v = inv.args.Last("top-k")) {
    ASSIGN_OR_RETURN(const int64_t k, ParseIntFlag("--top-k", *v, 1, 100000));
    req.set_top_k(static_cast<int32_t>(k));
  }
  if (const std::string* v = inv.args.Last("objective")) {
    if (*v == "throughput") {
      req.set_objective(pb::OBJECTIVE_THROUGHPUT);
    } else if (*v == "energy") {
      req.set_objective(pb::OBJECTIVE_ENERGY);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--objective: '", *v, "' is not throughput or energy"));
    }
  }
  if (const std::string* v = inv.args.Last("max-layouts")) {
    ASSIGN_OR_RETURN(const int64_t n,
                     ParseIntFlag("--max-layouts", *v, 1, std::numeric_limits<int64_t>::max()));
    req.mutable_limits()->set_max_layouts(n);
  }
  req.set_refresh(inv.args.Has("refresh") && *inv.args.Last("refresh") == "true");
  return req;
}

// The sweep's results in GPU-count order (a progress bar on a terminal's stderr while it runs).
grpc::Status StreamSweep(const Invocation& inv, Client& client, const pb::SweepRequest& req,
                         std::vector<pb::SweepResult>* results) {
  grpc::ClientContext ctx;
  client.Prepare(&ctx);
  std::unique_ptr<grpc::ClientReader<pb::SweepResponse>> reader = client.stub()->Sweep(&ctx, req);
  pb::SweepResponse msg;
  bool drew = false;
  while (reader->Read(&msg)) {
    if (msg.has_progress()) {
      if (inv.env.stderr_is_tty) {
        inv.err << "\r" << ProgressBar(msg.progress(), 79) << std::flush;
        drew = true;
      }
    } else if (msg.has_result()) {
      results->push_back(msg.result());
    }
  }
  if (drew) inv.err << "\r" << std::string(79, ' ') << "\r" << std::flush;
  std::stable_sort(results->begin(), results->end(),
                   [](const pb::SweepResult& a, const pb::SweepResult& b) {
                     return a.gpu_count() < b.gpu_count();
                   });
  return reader->Finish();
}

absl::Status WriteSweepSvg(const pb::Scenario& base, const std::vector<pb::SweepResult>& results,
                           int diminishing, const std::string& path) {
  const std::string title = absl::StrCat(
      base.workload().model().name().empty() ? "custom model" : base.workload().model().name(),
      " on ", base.cluster().accelerator(), ": scaling with GPU count");
  return WriteOutput("plot", path,
                     RenderScalingSvg(title, PlotPointsFromSweep(results),
                                      diminishing >= 0 ? results[diminishing].gpu_count() : 0));
}

int Sweep(const Invocation& inv) {
  absl::StatusOr<pb::SweepRequest> req = BuildSweepRequest(inv);
  if (!req.ok()) return UsageError(inv, req.status());
  absl::StatusOr<const std::string*> plot = OutputPath(inv, "plot");
  if (!plot.ok()) return UsageError(inv, plot.status());
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  std::vector<pb::SweepResult> results;
  if (grpc::Status st = StreamSweep(inv, **client, *req, &results); !st.ok()) {
    return RpcError(inv, st);
  }
  const int diminishing = DiminishingReturnsIndex(results);
  const pb::Scenario& base = req->base();
  switch (inv.options.format) {
    case OutputFormat::kJson:
      inv.out << FormatSweepJson(results, diminishing);
      break;
    case OutputFormat::kCsv:
      inv.out << FormatSweepCsv(base, results, diminishing);
      break;
    case OutputFormat::kTable:
      inv.out << FormatSweepTable(base, results, diminishing, inv.args.Has("top-k"),
                                  inv.options.wide);
      break;
  }
  if (*plot != nullptr) {
    if (absl::Status st = WriteSweepSvg(base, results, diminishing, **plot); !st.ok()) {
      return UsageError(inv, st);
    }
    (inv.options.format == OutputFormat::kTable ? inv.out : inv.err)
        << "Plot written to " << **plot << "\n";
  }
  return kExitOk;
}

int MeasurementsImport(const Invocation& inv) {
  const std::string& path = inv.args.positionals.front();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    inv.err << "error: cannot read '" << path << "'\nnothing was recorded\n";
    return kExitUsage;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  // The server reads the file (the one CSV reader): a bad row comes back by line and column.
  pb::ImportMeasurementsRequest req;
  req.set_csv(text.str());
  pb::RecordMeasurementsResponse resp;
  grpc::ClientContext ctx;
  (*client)->Prepare(&ctx);
  grpc::Status st = (*client)->stub()->ImportMeasurements(&ctx, req, &resp);
  if (st.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
    inv.err << "error: " << path << ": " << st.error_message() << "\nnothing was recorded\n";
    return kExitUsage;
  }
  if (!st.ok()) {
    RpcError(inv, st);
    inv.err << "nothing was recorded\n";
    return kExitServer;
  }
  Print(
      inv, resp,
      [&] {
        std::string out = absl::StrCat("Recorded ", resp.recorded_count(), " measurements from ",
                                       path, " in one batch");
        if (resp.duplicate_count() > 0) {
          absl::StrAppend(&out, "; ", resp.duplicate_count(),
                          resp.duplicate_count() == 1 ? " duplicate" : " duplicates",
                          " skipped (identical scenario, source and measured values)");
        }
        return out + ".\n";
      },
      [&] {
        std::string out = CsvLine({"id"});
        for (const std::string& id : resp.ids()) out += CsvLine({id});
        return out;
      });
  return kExitOk;
}

int MeasurementsList(const Invocation& inv) {
  absl::StatusOr<pb::MeasurementFilter> filter = BuildFilter(inv.args);
  if (!filter.ok()) return UsageError(inv, filter.status());
  pb::ListMeasurementsRequest req;
  *req.mutable_filter() = *filter;
  if (const std::string* v = inv.args.Last("page-size")) {
    absl::StatusOr<int64_t> n = ParseIntFlag("--page-size", *v, 1, kMaxPageSize);
    if (!n.ok()) return UsageError(inv, n.status());
    req.set_page_size(static_cast<int32_t>(*n));
  }
  if (const std::string* v = inv.args.Last("page-token")) req.set_page_token(*v);
  const bool all = inv.args.Has("all") && *inv.args.Last("all") == "true";
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  pb::ListMeasurementsResponse merged;
  std::set<std::string> tokens_seen;
  while (true) {
    pb::ListMeasurementsResponse page;
    grpc::ClientContext ctx;
    (*client)->Prepare(&ctx);
    grpc::Status st = (*client)->stub()->ListMeasurements(&ctx, req, &page);
    if (!st.ok()) return RpcError(inv, st);
    for (pb::Measurement& m : *page.mutable_measurements()) {
      *merged.add_measurements() = std::move(m);
    }
    merged.set_total_count(page.total_count());
    merged.set_next_page_token(page.next_page_token());
    // A token seen before would loop forever: stop and leave it in next_page_token.
    if (!all || page.next_page_token().empty() ||
        !tokens_seen.insert(page.next_page_token()).second) {
      break;
    }
    req.set_page_token(page.next_page_token());
  }
  Print(
      inv, merged, [&] { return FormatMeasurementsTable(merged, inv.options.wide); },
      [&] { return FormatMeasurementsCsv(merged); });
  return kExitOk;
}

int MeasurementsDelete(const Invocation& inv) {
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  pb::DeleteMeasurementRequest req;
  req.set_id(inv.args.positionals.front());
  pb::DeleteMeasurementResponse resp;
  grpc::ClientContext ctx;
  (*client)->Prepare(&ctx);
  grpc::Status st = (*client)->stub()->DeleteMeasurement(&ctx, req, &resp);
  if (!st.ok()) return RpcError(inv, st);
  Print(
      inv, resp, [&] { return absl::StrCat("Deleted measurement ", req.id(), ".\n"); },
      [&] { return CsvLine({"deleted"}) + CsvLine({req.id()}); });
  return kExitOk;
}

int Validate(const Invocation& inv) {
  absl::StatusOr<pb::MeasurementFilter> filter = BuildFilter(inv.args);
  if (!filter.ok()) return UsageError(inv, filter.status());
  pb::ValidateRequest req;
  *req.mutable_filter() = *filter;
  if (const std::string* v = inv.args.Last("calibration")) req.set_calibration(*v);
  const bool rows = inv.args.Has("rows") && *inv.args.Last("rows") == "true";
  req.set_include_rows(rows);
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  pb::ValidateResponse resp;
  grpc::ClientContext ctx;
  (*client)->Prepare(&ctx);
  grpc::Status st = (*client)->stub()->Validate(&ctx, req, &resp);
  if (!st.ok()) return RpcError(inv, st);
  Print(
      inv, resp, [&] { return FormatValidateTable(resp, rows, inv.options.wide); },
      [&] { return FormatValidateCsv(resp); });
  return kExitOk;
}

int Calibrate(const Invocation& inv) {
  const std::string* name = inv.args.Last("name");
  if (name == nullptr || name->empty()) {
    return UsageError(inv, absl::InvalidArgumentError("--name: the profile to fit is required"));
  }
  absl::StatusOr<pb::MeasurementFilter> filter = BuildFilter(inv.args);
  if (!filter.ok()) return UsageError(inv, filter.status());
  pb::CalibrateRequest req;
  req.set_name(*name);
  *req.mutable_filter() = *filter;
  if (const std::string* v = inv.args.Last("start-from")) req.set_start_from(*v);
  req.set_cross_validate(inv.args.Has("cross-validate") &&
                         *inv.args.Last("cross-validate") == "true");
  req.set_replace(inv.args.Has("replace") && *inv.args.Last("replace") == "true");
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  pb::CalibrateResponse resp;
  grpc::ClientContext ctx;
  (*client)->Prepare(&ctx);
  grpc::Status st = (*client)->stub()->Calibrate(&ctx, req, &resp);
  if (!st.ok()) return RpcError(inv, st);
  Print(
      inv, resp, [&] { return FormatCalibrateTable(resp); },
      [&] { return FormatCalibrateCsv(resp); });
  return kExitOk;
}

// Every stored profile: the server sends them a page at a time; all pages, in one response.
grpc::Status FetchProfiles(Client* client, pb::ListProfilesResponse* resp) {
  pb::ListProfilesRequest req;
  do {
    grpc::ClientContext ctx;
    client->Prepare(&ctx);
    pb::ListProfilesResponse page;
    if (grpc::Status st = client->stub()->ListProfiles(&ctx, req, &page); !st.ok()) return st;
    for (pb::CalibrationProfile& p : *page.mutable_profiles()) {
      *resp->add_profiles() = std::move(p);
    }
    req.set_page_token(page.next_page_token());
  } while (!req.page_token().empty());
  return grpc::Status::OK;
}

int ProfilesList(const Invocation& inv) {
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  pb::ListProfilesResponse resp;
  if (grpc::Status st = FetchProfiles(client->get(), &resp); !st.ok()) return RpcError(inv, st);
  Print(
      inv, resp, [&] { return FormatProfilesTable(resp); },
      [&] { return FormatProfilesCsv(resp); });
  return kExitOk;
}

int ProfilesShow(const Invocation& inv) {
  const std::string& name = inv.args.positionals.front();
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  pb::ListProfilesResponse resp;
  if (grpc::Status st = FetchProfiles(client->get(), &resp); !st.ok()) return RpcError(inv, st);
  for (const pb::CalibrationProfile& p : resp.profiles()) {
    if (p.name() != name) continue;
    Print(
        inv, p, [&] { return FormatProfileTable(p); }, [&] { return FormatProfileCsv(p); });
    return kExitOk;
  }
  return RpcError(inv, grpc::Status(grpc::StatusCode::NOT_FOUND,
                                    absl::StrCat("name: profile '", name, "' not found")));
}

int ProfilesDelete(const Invocation& inv) {
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  pb::DeleteProfileRequest req;
  req.set_name(inv.args.positionals.front());
  pb::DeleteProfileResponse resp;
  grpc::ClientContext ctx;
  (*client)->Prepare(&ctx);
  grpc::Status st = (*client)->stub()->DeleteProfile(&ctx, req, &resp);
  if (!st.ok()) return RpcError(inv, st);
  Print(
      inv, resp, [&] { return absl::StrCat("Deleted profile ", req.name(), ".\n"); },
      [&] { return CsvLine({"deleted"}) + CsvLine({req.name()}); });
  return kExitOk;
}

int Accelerators(const Invocation& inv) {
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  pb::ListAcceleratorsResponse resp;
  grpc::ClientContext ctx;
  (*client)->Prepare(&ctx);
  grpc::Status st = (*client)->stub()->ListAccelerators(&ctx, pb::ListAcceleratorsRequest(), &resp);
  if (!st.ok()) return RpcError(inv, st);
  Print(
      inv, resp, [&] { return FormatAcceleratorsTable(resp, inv.options.wide); },
      [&] { return FormatAcceleratorsCsv(resp); });
  return kExitOk;
}

int AcceleratorsAdd(const Invocation& inv) {
  const std::string& path = inv.args.positionals.front();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return UsageError(inv, absl::InvalidArgumentError(absl::StrCat("cannot read '", path, "'")));
  }
  std::stringstream text;
  text << in.rdbuf();
  pb::RegisterAcceleratorRequest req;
  google::protobuf::util::JsonParseOptions options;  // strict: unknown fields are errors
  if (auto ps = JsonStringToMessage(text.str(), req.mutable_spec(), options); !ps.ok()) {
    return UsageError(inv,
                      absl::InvalidArgumentError(absl::StrCat(
                          path, ": not an AcceleratorSpec in JSON: ", std::string(ps.message()))));
  }
  if (const std::string* v = inv.args.Last("replace")) req.set_replace(*v == "true");
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  pb::RegisterAcceleratorResponse resp;
  grpc::ClientContext ctx;
  (*client)->Prepare(&ctx);
  grpc::Status st = (*client)->stub()->RegisterAccelerator(&ctx, req, &resp);
  if (!st.ok()) return RpcError(inv, st);
  pb::ListAcceleratorsResponse shown;
  *shown.add_accelerators() = resp.accelerator();
  Print(
      inv, resp,
      [&] {
        std::string out = absl::StrCat("Registered ", resp.accelerator().id(), ".\n",
                                       FormatAcceleratorsTable(shown, inv.options.wide));
        if (!resp.accelerator().like_basis().empty()) {
          absl::StrAppend(&out, "Fitted efficiencies: ", resp.accelerator().like_basis(), "\n");
        }
        return out;
      },
      [&] { return FormatAcceleratorsCsv(shown); });
  return kExitOk;
}

int AcceleratorsDelete(const Invocation& inv) {
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  pb::DeleteAcceleratorRequest req;
  req.set_id(inv.args.positionals.front());
  pb::DeleteAcceleratorResponse resp;
  grpc::ClientContext ctx;
  (*client)->Prepare(&ctx);
  grpc::Status st = (*client)->stub()->DeleteAccelerator(&ctx, req, &resp);
  if (!st.ok()) return RpcError(inv, st);
  Print(
      inv, resp, [&] { return absl::StrCat("Deleted accelerator ", req.id(), ".\n"); },
      [&] { return CsvLine({"deleted"}) + CsvLine({req.id()}); });
  return kExitOk;
}

int Models(const Invocation& inv) {
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  pb::ListModelsResponse resp;
  grpc::ClientContext ctx;
  (*client)->Prepare(&ctx);
  grpc::Status st = (*client)->stub()->ListModels(&ctx, pb::ListModelsRequest(), &resp);
  if (!st.ok()) return RpcError(inv, st);
  Print(
      inv, resp, [&] { return FormatModelsTable(resp); }, [&] { return FormatModelsCsv(resp); });
  return kExitOk;
}

int Health(const Invocation& inv) {
  auto client = Connect(inv);
  if (!client.ok()) return UsageError(inv, client.status());
  grpc::health::v1::HealthCheckRequest req;
  if (const std::string* v = inv.args.Last("service")) req.set_service(*v);
  grpc::health::v1::HealthCheckResponse resp;
  grpc::ClientContext ctx;
  (*client)->Prepare(&ctx);
  grpc::Status st = (*client)->health()->Check(&ctx, req, &resp);
  if (!st.ok()) return RpcError(inv, st);
  const std::string status =
      grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status());
  Print(
      inv, resp, [&] { return status + "\n"; },
      [&] { return CsvLine({"status"}) + CsvLine({status}); });
  return resp.status() == grpc::health::v1::HealthCheckResponse::SERVING ? kExitOk : kExitServer;
}

}  // namespace

int RunCommand(const Invocation& inv) {
  const std::string& c = inv.args.command;
  if (c == "predict") return Predict(inv);
  if (c == "compare") return Compare(inv);
  if (c == "sweep") return Sweep(inv);
  if (c == "plan") return PlanCommand(inv);
  if (c == "measurements import") return MeasurementsImport(inv);
  if (c == "measurements list") return MeasurementsList(inv);
  if (c == "measurements delete") return MeasurementsDelete(inv);
  if (c == "profiles list") return ProfilesList(inv);
  if (c == "profiles show") return ProfilesShow(inv);
  if (c == "profiles delete") return ProfilesDelete(inv);
  if (c == "validate") return Validate(inv);
  if (c == "calibrate") return Calibrate(inv);
  if (c == "accelerators") return Accelerators(inv);
  if (c == "accelerators add") return AcceleratorsAdd(inv);
  if (c == "accelerators delete") return AcceleratorsDelete(inv);
  if (c == "models") return Models(inv);
  if (c == "health") return Health(inv);
  return UsageError(inv, absl::InvalidArgumentError(absl::StrCat("unknown command '", c, "'")));
}

}  // namespace scalecast::cli
