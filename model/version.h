// The scaling model's version as the service reports it and keys its sweep cache with.
#ifndef SCALECAST_MODEL_VERSION_H_
#define SCALECAST_MODEL_VERSION_H_

#include <string>

#include "absl/strings/string_view.h"

namespace scalecast {

// `base` (the release number, CMake's SCALECAST_MODEL_VERSION) with a digest of the built-in
// catalog and calibration profile: "2026.12.5+1a2b3c4d". Every refit rewrites the profile, so a
// server upgraded over a kept store never answers a sweep from the previous model's cache, even
// when the release number was not bumped.
std::string ModelVersionOf(absl::string_view base, absl::string_view catalog,
                           absl::string_view profile);

// This build's: ModelVersionOf(SCALECAST_MODEL_VERSION, the embedded catalog and profile).
const std::string& ModelVersion();

}  // namespace scalecast

#endif  // SCALECAST_MODEL_VERSION_H_
