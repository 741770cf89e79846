#include "model/uncertainty.h"

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/framework.h"
#include "model/records.h"

namespace scalecast {
namespace {

// Widening where the data says nothing, as multiples of the band's log-width. Set so that the
// band covers ~80 % of held-out runs in leave-one-source-out validation (scalecast-validate
// reports the coverage): a stack measured on other hardware generations but never on this one;
// a hardware generation never measured; fp4 training (no fp4 runs in the calibration sets); and
// per doubling of the GPU count beyond the largest fitted run.
constexpr double kUnseenPairFactor = 1.5;
constexpr double kUnseenGenerationFactor = 2.0;
constexpr double kFp4Factor = 1.5;
constexpr double kPerDoublingBeyondData = 0.3;
// A described accelerator whose compute peaks or HBM bandwidth differ from the catalog part
// whose fitted efficiencies it uses: those efficiencies belong to other silicon, widened as much
// as a stack never measured on a generation (the same kind of transfer).
constexpr double kBorrowedFactor = kUnseenPairFactor;

// The widening for a described part, or a catalog part that borrows another's efficiencies
// (Accelerator::borrowed), appended to `e`.
void AddBorrowed(const Accelerator& acc, Extrapolation* e) {
  if (!acc.borrowed) return;
  e->factor *= kBorrowedFactor;
  absl::StrAppend(&e->basis, "; ", acc.id,
                  acc.origin == "catalog" ? " borrows: " : " is described: ", acc.like_basis);
}

// Why a band is the one of its level (StatedFacts order; the first, every fact, needs none).
constexpr absl::string_view kFewerFactsBasis[] = {
    "",
    "no stack feature stated: the band of held-out runs asked with the framework and version only",
    "no framework version stated: today's release, and the band of held-out runs asked with the "
    "framework only",
    "no framework the table knows: the generic stack, and the band of held-out runs asked with no "
    "framework"};

const Framework& FrameworkOrGeneric(absl::string_view name) {
  const Framework* f = FindFramework(name);
  return f != nullptr ? *f : GenericFramework();
}

}  // namespace

std::string SeenKey(absl::string_view framework, const Accelerator& acc) {
  return absl::StrCat(FrameworkOrGeneric(framework).family, "/", GenerationOf(acc.family));
}

Extrapolation ExtrapolationOf(const Scenario& s, const Accelerator& acc, const Profile& profile) {
  return ExtrapolationOf(s, FrameworkOrGeneric(s.framework), acc, profile);
}

Extrapolation ExtrapolationOf(const Scenario& s, const Framework& framework, const Accelerator& acc,
                              const Profile& profile) {
  Extrapolation e;
  const BandParams& band = profile.band;
  if (band.seen.empty()) {
    e.basis = "band from the profile's residuals; the profile records no calibration data";
    AddBorrowed(acc, &e);
    return e;
  }
  const absl::string_view family = framework.family;
  const absl::string_view generation = GenerationOf(acc.family);
  // One pass over the keys ("<family>/<generation>", SeenKey): this pair's runs, and whether
  // any stack was measured on the generation; no key string is built.
  const int* runs = nullptr;
  bool generation_seen = false;
  for (const auto& [key, n] : band.seen) {
    if (key.size() <= generation.size() || !absl::EndsWith(key, generation) ||
        key[key.size() - generation.size() - 1] != '/') {
      continue;
    }
    generation_seen = true;
    if (key.size() == family.size() + 1 + generation.size() && absl::StartsWith(key, family)) {
      runs = &n;
      break;
    }
  }
  if (runs != nullptr) {
    e.basis = absl::StrCat("calibrated: ", *runs, " runs of ", family, " stacks on ", generation);
  } else if (generation_seen) {
    e.factor *= kUnseenPairFactor;
    e.basis = absl::StrCat("extrapolated: ", family, " stacks never measured on ", generation,
                           " (other stacks were)");
  } else {
    e.factor *= kUnseenGenerationFactor;
    e.basis = absl::StrCat("extrapolated: no run on ", generation, " hardware was fitted");
  }
  if (IsFp4(s.workload.precision)) {
    e.factor *= kFp4Factor;
    absl::StrAppend(&e.basis, "; fp4 training is not in the calibration data");
  }
  if (band.max_gpus > 0 && s.cluster.num_gpus > band.max_gpus) {
    const double doublings = std::log2(static_cast<double>(s.cluster.num_gpus) / band.max_gpus);
    e.factor *= 1 + kPerDoublingBeyondData * doublings;
    absl::StrAppend(&e.basis, absl::StrFormat("; %d GPUs is beyond the largest fitted run (%d)",
                                              s.cluster.num_gpus, band.max_gpus));
  }
  AddBorrowed(acc, &e);
  return e;
}

void AttachUncertainty(const Scenario& s, const Accelerator& acc, const Profile& profile,
                       Prediction* prediction) {
  AttachUncertainty(s, FrameworkOrGeneric(s.framework), acc, profile, prediction);
}

StatedFacts FactsStated(const Scenario& s) {
  return FactsStated(s, FrameworkOrGeneric(s.framework));
}

StatedFacts FactsStated(const Scenario& s, const Framework& framework) {
  if (&framework == &GenericFramework()) return StatedFacts::kNone;
  if (s.stack.version.empty()) return StatedFacts::kFramework;
  StackOptions version_only;
  version_only.version = s.stack.version;
  return s.stack == version_only ? StatedFacts::kVersion : StatedFacts::kAll;
}

void AttachUncertainty(const Scenario& s, const Framework& framework, const Accelerator& acc,
                       const Profile& profile, Prediction* prediction) {
  Extrapolation e = ExtrapolationOf(s, framework, acc, profile);
  double low = profile.band.low_ratio, high = profile.band.high_ratio;
  const StatedFacts facts = FactsStated(s, framework);
  auto fewer = profile.band.fewer_facts.find(facts);
  if (fewer != profile.band.fewer_facts.end() && fewer->second.low > 0 && fewer->second.high > 0) {
    low = fewer->second.low;
    high = fewer->second.high;
    absl::StrAppend(&e.basis, "; ", kFewerFactsBasis[static_cast<int>(facts)]);
  }
  const double v = prediction->tokens_per_s_per_gpu;
  Uncertainty& u = prediction->uncertainty;
  u.level = 0.8;
  u.low = v * std::pow(low, e.factor);
  u.high = v * std::pow(high, e.factor);
  u.basis = std::move(e.basis);
  // The limits of the possible: a band wholly above the best MFU ever published on this
  // generation and precision is flagged.
  const MfuRecord* record = FindMfuRecord(GenerationOf(acc.family), s.workload.precision);
  if (record != nullptr && v > 0 && prediction->mfu * u.low / v > record->mfu) {
    prediction->warnings.push_back(absl::StrFormat(
        "predicted MFU %.1f%% lies above the best published on %s %s (%.1f%%, %s: %s) by more "
        "than its band",
        100 * prediction->mfu, record->generation, record->precision, 100 * record->mfu,
        record->what, record->source));
  }
}

}  // namespace scalecast
