// How the CLI prints each response: tables for people, flat CSV for spreadsheets. Pure functions
// of the messages, so tests check them without a server. (JSON is table.h's ToJson.)
#ifndef SCALECAST_CLIENTS_CLI_FORMAT_H_
#define SCALECAST_CLIENTS_CLI_FORMAT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/scalecast/v1/scalecast.pb.h"

namespace scalecast::cli {

namespace pb = ::scalecast::v1;

// "tp2 pp4 vpp4 cp2 dp64 ep8 etp2 zero1 mb1 rc=none sp": tp and pp always, vpp/cp only above 1,
// dp, ep/etp (expert and expert-tensor parallel) only above 1, sharding (hsdp with its group),
// micro batch, recompute (rc=none|sel|full), "sp" for sequence parallelism. The Python client's
// str(Layout) writes the same.
std::string LayoutShort(const pb::Parallelism& p);
// "256 routed, top-8, ffn 2048, 1 shared, 3 dense layers, dropless"; "" for a dense model.
std::string MoeWords(const pb::ModelSpec& m);
// Latent attention, local attention and the hybrid pattern in words; "" when none applies.
std::string AttentionWords(const pb::ModelSpec& m);
// "llama2-70b on 2048 x h100-sxm-80gb".
std::string ScenarioTitle(const pb::Scenario& s);
// `s` as SVG/XML text or attribute value: & < > " ' as entities (the plan and sweep plots).
std::string XmlEscape(absl::string_view s);

// predict
std::string FormatPredictTable(const pb::Scenario& scenario, const pb::PredictResponse& response);
// Flat columns for one prediction; `scenario` fills the model/accelerator/gpus columns.
std::vector<std::string> PredictionCsvHeader();
std::vector<std::string> PredictionCsvRow(const pb::Scenario& scenario, const pb::Prediction& p);
std::string FormatPredictCsv(const pb::Scenario& scenario, const pb::PredictResponse& response);

// compare: `scenarios` are the request's, in order.
// Tables fit kTableWidth columns unless `wide`. The server's resolved scenarios (when it sent
// them) are printed, else the request's.
std::string FormatCompareTable(const std::vector<pb::Scenario>& scenarios,
                               const pb::CompareResponse& response, bool wide = false);
std::string FormatCompareCsv(const std::vector<pb::Scenario>& scenarios,
                             const pb::CompareResponse& response);

// sweep. `results` sorted by GPU count. The diminishing-returns point (see `sweep --help`): the
// index of the first result, among those with a feasible layout, where the tokens/s gained per
// added GPU drops below half the first step's, or the scaling efficiency against the smallest
// count drops below 70%; -1 when none (or fewer than two feasible counts).
int DiminishingReturnsIndex(const std::vector<pb::SweepResult>& results);
std::string FormatSweepTable(const pb::Scenario& base, const std::vector<pb::SweepResult>& results,
                             int diminishing, bool show_top, bool wide = false);
std::string FormatSweepCsv(const pb::Scenario& base, const std::vector<pb::SweepResult>& results,
                           int diminishing);
std::string FormatSweepJson(const std::vector<pb::SweepResult>& results, int diminishing);
// "[=========>        ]  42% 1,234/2,940 layouts (512 GPUs)" for a terminal of `width` columns.
std::string ProgressBar(const pb::SweepProgress& p, int width);

// measurements, validate, calibrate, catalog (format_store.cc)
std::string FormatMeasurementsTable(const pb::ListMeasurementsResponse& r, bool wide = false);
// The import format's columns (calibration.csv), plus step_time_s, watts_per_gpu, recorded_at.
std::string FormatMeasurementsCsv(const pb::ListMeasurementsResponse& r);
std::string FormatValidateTable(const pb::ValidateResponse& r, bool rows, bool wide = false);
std::string FormatValidateCsv(const pb::ValidateResponse& r);
std::string FormatCalibrateTable(const pb::CalibrateResponse& r);
std::string FormatCalibrateCsv(const pb::CalibrateResponse& r);
// profiles list / profiles show
std::string FormatProfilesTable(const pb::ListProfilesResponse& r);
std::string FormatProfilesCsv(const pb::ListProfilesResponse& r);
std::string FormatProfileTable(const pb::CalibrationProfile& p);
std::string FormatProfileCsv(const pb::CalibrationProfile& p);
std::string FormatAcceleratorsTable(const pb::ListAcceleratorsResponse& r, bool wide = false);
std::string FormatAcceleratorsCsv(const pb::ListAcceleratorsResponse& r);
std::string FormatModelsTable(const pb::ListModelsResponse& r);
std::string FormatModelsCsv(const pb::ListModelsResponse& r);

}  // namespace scalecast::cli

#endif  // SCALECAST_CLIENTS_CLI_FORMAT_H_
