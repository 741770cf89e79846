// FNV-1a (Fowler, Noll and Vo; http://www.isthe.com/chongo/tech/comp/fnv/): a stable hash, the
// same in every build and process, unlike absl::Hash, which is seeded per process. Used where a
// hash outlives the process: metric label digests, page-token checks, the model version.
#ifndef SCALECAST_MODEL_FNV_H_
#define SCALECAST_MODEL_FNV_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace scalecast {

inline constexpr uint32_t kFnv32OffsetBasis = 2166136261u;
inline constexpr uint32_t kFnv32Prime = 16777619u;
inline constexpr uint64_t kFnv64OffsetBasis = 14695981039346656037ULL;
inline constexpr uint64_t kFnv64Prime = 1099511628211ULL;

inline uint32_t Fnv1a32(absl::string_view s) {
  uint32_t h = kFnv32OffsetBasis;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= kFnv32Prime;
  }
  return h;
}

// `h` continues a hash: Fnv1a64(b, Fnv1a64(a)) is the hash of a followed by b.
inline uint64_t Fnv1a64(absl::string_view s, uint64_t h = kFnv64OffsetBasis) {
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= kFnv64Prime;
  }
  return h;
}

}  // namespace scalecast

#endif  // SCALECAST_MODEL_FNV_H_
