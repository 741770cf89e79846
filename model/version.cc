#include "model/version.h"

#include <cstdint>

#include "absl/strings/str_format.h"
#include "model/embedded_data.h"
#include "model/fnv.h"

namespace scalecast {

std::string ModelVersionOf(absl::string_view base, absl::string_view catalog,
                           absl::string_view profile) {
  // The catalog's length goes in first, so that moving text between the two files changes the
  // digest too.
  uint64_t h = Fnv1a64(absl::StrFormat("%d:", catalog.size()));
  h = Fnv1a64(profile, Fnv1a64(catalog, h));
  return absl::StrFormat("%s+%08x", base, static_cast<uint32_t>(h ^ (h >> 32)));
}

const std::string& ModelVersion() {
  static const std::string* const kVersion = new std::string(ModelVersionOf(
      SCALECAST_MODEL_VERSION, embedded::kCatalogText, embedded::kDefaultProfileText));
  return *kVersion;
}

}  // namespace scalecast
