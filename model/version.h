// The scaling model's version as the service reports it and keys its sweep cache with.
#ifndef SCALECAST_MODEL_VERSION_H_
#define SCALECAST_MODEL_VERSION_H_

#include <string>

#include "absl/strings/string_view.h"

namespace scalecast {

// `base` (the release number, CMake's SCALECAST_MODEL_VERSION) with a digest of the built-in
// catalog, calibration profile and release recipes (model/recipe_presets.h):
// "2026.12.5+1a2b3c4d". Every refit rewrites the profile and every regenerated recipe table
// changes what a release's requests run, so a server upgraded over a kept store never answers a
// sweep from the previous model's cache, even when the release number was not bumped.
std::string ModelVersionOf(absl::string_view base, absl::string_view catalog,
                           absl::string_view profile, absl::string_view presets = "");

// This build's: ModelVersionOf(SCALECAST_MODEL_VERSION, the embedded catalog, profile and
// recipe presets).
const std::string& ModelVersion();

}  // namespace scalecast

#endif  // SCALECAST_MODEL_VERSION_H_
