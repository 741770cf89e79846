#include "model/version.h"

#include <cstdint>

#include "absl/strings/str_format.h"
#include "model/embedded_data.h"
#include "model/fnv.h"

namespace scalecast {

std::string ModelVersionOf(absl::string_view base, absl::string_view catalog,
                           absl::string_view profile, absl::string_view presets) {
  // Each file's length goes in before the next, so that moving text between them changes the
  // digest too (none for an empty presets table: the catalog and profile's digest as it was).
  uint64_t h = Fnv1a64(absl::StrFormat("%d:", catalog.size()));
  h = Fnv1a64(profile, Fnv1a64(catalog, h));
  if (!presets.empty()) h = Fnv1a64(presets, Fnv1a64(absl::StrFormat("%d:", profile.size()), h));
  return absl::StrFormat("%s+%08x", base, static_cast<uint32_t>(h ^ (h >> 32)));
}

const std::string& ModelVersion() {
  static const std::string* const kVersion =
      new std::string(ModelVersionOf(SCALECAST_MODEL_VERSION, embedded::kCatalogText,
                                     embedded::kDefaultProfileText, embedded::kBridgePresetsText));
  return *kVersion;
}

}  // namespace scalecast
