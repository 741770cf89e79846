#include "model/version.h"

#include <cstdint>

#include "absl/strings/str_format.h"
#include "model/embedded_data.h"

namespace scalecast {
namespace {

// 64-bit FNV-1a (Fowler, Noll and Vo; the offset basis and prime of the IETF draft
// draft-eastlake-fnv): stable across builds and processes, unlike absl::Hash, which is seeded.
constexpr uint64_t kFnvOffsetBasis = 14695981039346656037ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

uint64_t Fnv1a(absl::string_view text, uint64_t h) {
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= kFnvPrime;
  }
  return h;
}

}  // namespace

std::string ModelVersionOf(absl::string_view base, absl::string_view catalog,
                           absl::string_view profile) {
  // The catalog's length goes in first, so that moving text between the two files changes the
  // digest too.
  uint64_t h = Fnv1a(absl::StrFormat("%d:", catalog.size()), kFnvOffsetBasis);
  h = Fnv1a(profile, Fnv1a(catalog, h));
  return absl::StrFormat("%s+%08x", base, static_cast<uint32_t>(h ^ (h >> 32)));
}

const std::string& ModelVersion() {
  static const std::string* const kVersion = new std::string(ModelVersionOf(
      SCALECAST_MODEL_VERSION, embedded::kCatalogText, embedded::kDefaultProfileText));
  return *kVersion;
}

}  // namespace scalecast
