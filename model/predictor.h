// The scaling model's entry points: check and complete a scenario, then predict its step time,
// throughput, MFU, memory, communication and power. Pure: everything comes in as arguments.
#ifndef SCALECAST_MODEL_PREDICTOR_H_
#define SCALECAST_MODEL_PREDICTOR_H_

#include <string>

#include "absl/status/statusor.h"
#include "model/catalog.h"
#include "model/framework.h"
#include "model/limits.h"
#include "model/profile.h"
#include "model/types.h"

namespace scalecast {

// Checks a scenario and fills what the catalog knows: the preset's shape, kv_heads = heads,
// precision bf16. Errors are INVALID_ARGUMENT or NOT_FOUND with the field path in the message
// ("scenario.parallelism.tp: 3 does not divide heads=64"). Layout fields stay 0 when unset.
absl::StatusOr<Scenario> ResolveScenario(const Scenario& in, const Catalog& catalog);

// A scenario resolved once, with what resolving it found: the accelerator and the framework's
// stack. What follows a resolution (a prediction, the planner, echoing the scenario back) takes
// this and looks nothing up again.
struct ResolvedScenario {
  Scenario scenario;                         // as ResolveScenario completes it
  const Accelerator* accelerator = nullptr;  // in the catalog it was resolved against
  const Framework* framework = nullptr;      // the generic framework for ""
  Stack stack;                               // every feature the framework's defaults decide
};

// Where a scenario's parts sit in a request, for the paths its errors name: views (of strings
// the caller keeps for the call), joined only on an error. A Scenario message holds them all
// (Under("scenarios[2]"): "scenarios[2].workload.seq_len"); Plan's request spreads them: the
// workload, framework and stack at its top, the cluster's fields in a candidate
// ("candidates[1].accelerator") and the layout in the candidate's "candidates[1].layout".
struct ScenarioPaths {
  // `path` + `sub` ("scenarios[2]" + ".cluster"); both empty = the request's top.
  struct Place {
    absl::string_view path;
    absl::string_view sub;
  };
  absl::string_view top;  // the scenario's framework and stack: "scenario"; empty = the top
  Place workload;         // seq_len, global_batch, precision
  Place model;            // the workload's model
  Place cluster;          // accelerator, accelerator_spec, num_gpus, gpus_per_node, ...
  Place parallelism;      // the layout's fields
  // Every part in the Scenario message at `path` ("scenario", "scenarios[2]", "base").
  static ScenarioPaths Under(absl::string_view path);
};

// ResolveScenario's checks and completion, errors naming fields under `path` ("scenario",
// "scenarios[2]", "base": "scenarios[2].parallelism.tp: ...").
absl::StatusOr<ResolvedScenario> Resolve(const Scenario& in, const Catalog& catalog,
                                         absl::string_view path = "scenario");
// The same, each part's errors named where `paths` puts it.
absl::StatusOr<ResolvedScenario> Resolve(const Scenario& in, const Catalog& catalog,
                                         const ScenarioPaths& paths);
// The same into `*out` (default-constructed): nothing moved, for a caller that keeps it.
absl::Status Resolve(const Scenario& in, const Catalog& catalog, absl::string_view path,
                     ResolvedScenario* out);
// The same for `out->scenario`, resolved where it is (nothing copied): for a caller that
// converted the request into it. On an error it is left part-resolved.
absl::Status ResolveInPlace(const Catalog& catalog, absl::string_view path, ResolvedScenario* out);
absl::Status ResolveInPlace(const Catalog& catalog, const ScenarioPaths& paths,
                            ResolvedScenario* out);

// True when every layout field the model needs is set (tp, pp, vpp, cp, sharding, micro_batch,
// recompute); dp is derived.
bool LayoutComplete(const Parallelism& p);

// Predicts a scenario. Unset layout fields are chosen by the planner (best tokens/s), so this is
// the one call a client needs.
absl::StatusOr<Prediction> Predict(const Scenario& scenario, const Catalog& catalog,
                                   const Profile& profile);

// The same for a scenario resolved once (Resolve): nothing is looked up again.
absl::StatusOr<Prediction> Predict(const ResolvedScenario& resolved, const Catalog& catalog,
                                   const Profile& profile);

// Predicts a resolved scenario whose layout is complete (no planner). The fast path the planner
// and the fitter use.
absl::StatusOr<Prediction> PredictLayout(const Scenario& resolved, const Catalog& catalog,
                                         const Profile& profile);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_PREDICTOR_H_
