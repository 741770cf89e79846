// The 80 % band of a prediction: the profile's cross-validated residual quantiles, widened where
// the scenario lies outside what the profile was fitted on (a stack never measured on that
// hardware generation, fp4, more GPUs than any fitted run).
#ifndef SCALECAST_MODEL_UNCERTAINTY_H_
#define SCALECAST_MODEL_UNCERTAINTY_H_

#include <string>

#include "absl/strings/string_view.h"
#include "model/catalog.h"
#include "model/framework.h"
#include "model/profile.h"
#include "model/types.h"

namespace scalecast {

// The key of BandParams::seen: "<framework family>/<generation>".
std::string SeenKey(absl::string_view framework, const Accelerator& acc);

// How far a resolved scenario lies from the profile's data: a factor >= 1 on the band's
// log-width, and the reason in words.
struct Extrapolation {
  double factor = 1;
  std::string basis;
};
Extrapolation ExtrapolationOf(const Scenario& resolved, const Accelerator& acc,
                              const Profile& profile);
// The same with the scenario's framework already looked up (ResolvedScenario::framework).
Extrapolation ExtrapolationOf(const Scenario& resolved, const Framework& framework,
                              const Accelerator& acc, const Profile& profile);

// What a request states of the software: nothing where its framework is not in the table (the
// generic stack), the framework only where it names no version, the version where it states
// none of the stack's features, all of it otherwise. Its band is the one held-out runs so asked
// for gave (BandParams::fewer_facts).
StatedFacts FactsStated(const Scenario& s);
// The same with the scenario's framework already looked up (the generic stack where the table
// does not know it).
StatedFacts FactsStated(const Scenario& s, const Framework& framework);

// Fills prediction->uncertainty for a resolved scenario.
void AttachUncertainty(const Scenario& resolved, const Accelerator& acc, const Profile& profile,
                       Prediction* prediction);
void AttachUncertainty(const Scenario& resolved, const Framework& framework, const Accelerator& acc,
                       const Profile& profile, Prediction* prediction);

}  // namespace scalecast

#endif  // SCALECAST_MODEL_UNCERTAINTY_H_
