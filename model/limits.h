// The bounds on what a request may carry: one home for every layer (the model's checks, the
// store, the server's handlers, the CLI's flags). Beyond them a value is INVALID_ARGUMENT naming
// its field; they keep requests physical and bound the memory and time one call can take.
// Bounds an operator may tune (batch sizes, sweep limits) are ServerOptions, not here.
#ifndef SCALECAST_MODEL_LIMITS_H_
#define SCALECAST_MODEL_LIMITS_H_

#include <cstddef>
#include <cstdint>

#include "model/field_rules_gen.h"

namespace scalecast {

// --- A scenario ---------------------------------------------------------------------------------
// A scenario field's range is its proto option's (`(scalecast.v1.field)` min/max in
// proto/scalecast/v1/scalecast.proto), generated into model/field_rules_gen.h and checked by
// model/field_rules.h; the names below are those ranges' tops, for the code that needs one.
inline constexpr int kMaxGpus = static_cast<int>(field_rules::kClusterNumGpus.max);
inline constexpr int kMaxSeqLen = static_cast<int>(field_rules::kWorkloadSeqLen.max);
inline constexpr int64_t kMaxGlobalBatch =
    static_cast<int64_t>(field_rules::kWorkloadGlobalBatch.max);
inline constexpr int kMaxDim = static_cast<int>(field_rules::kModelSpecHidden.max);
inline constexpr int64_t kMaxHeadDim = static_cast<int64_t>(field_rules::kModelSpecHeadDim.max);
inline constexpr int64_t kMaxExperts =
    static_cast<int64_t>(field_rules::kModelSpecMoeNumExperts.max);
inline constexpr int64_t kMaxWindow =
    static_cast<int64_t>(field_rules::kModelSpecAttentionWindow.max);
inline constexpr int64_t kMaxLayers = static_cast<int64_t>(field_rules::kModelSpecLayers.max);
inline constexpr double kMaxCapacityFactor = field_rules::kModelSpecMoeCapacityFactor.max;
inline constexpr int kMaxMtpLayers = static_cast<int>(field_rules::kModelSpecMtpLayers.max);

// --- Strings
// --------------------------------------------------------------------------------------
inline constexpr size_t kMaxNameBytes = 256;  // ids, names, accelerator, framework
// A run's source: a citation, repository, commit and path included (the project's data files
// hold sources of up to 586 bytes).
inline constexpr size_t kMaxSourceBytes = 1024;
inline constexpr size_t kMaxLabelKeyBytes = 128;
inline constexpr size_t kMaxLabelValueBytes = 1024;
inline constexpr size_t kMaxLabels = 64;
// The `note` label: the free text of a measurements CSV's note column, a run's provenance (the
// project's data files hold notes of up to 8.2 KB); every other label value is bounded above.
inline constexpr size_t kMaxNoteBytes = 16 * 1024;
// A hybrid model's layer pattern: one character per layer, layers <= kMaxLayers.
inline constexpr size_t kMaxLayerPatternBytes = kMaxLayers;

// --- A measured run
// ------------------------------------------------------------------------------- Plausible
// measured values: anything beyond is a unit mistake or garbage and is refused.
inline constexpr double kMaxTokensPerSPerGpu = 1e7;  // ~100x the fastest small-model runs
inline constexpr double kMaxStepTimeS = 1e6;         // 11.6 days for one step
inline constexpr double kMaxWattsPerGpu = 1e5;       // ~100x any accelerator's TDP
inline constexpr int64_t kMaxRecordedAtUnixMs = 253402300799999;  // 9999-12-31T23:59:59.999Z

// --- Requests
// -------------------------------------------------------------------------------------
// ListMeasurements: page_size 0 means kDefaultPageSize; larger than kMaxPageSize means it.
inline constexpr int kDefaultPageSize = 100;
inline constexpr int kMaxPageSize = 1000;
inline constexpr size_t kMaxPageTokenBytes = 256;
// ModelSpec.hf_config_json: a Hugging Face config.json (Llama 4's, vision tower included, is
// ~10 KB).
inline constexpr size_t kMaxHfConfigBytes = 256 * 1024;
// ImportMeasurements: the largest CSV read, room for the 100000 runs a batch may hold at ~300
// bytes a row, well under the 64 MiB message bound.
inline constexpr size_t kMaxImportCsvBytes = 32 << 20;
// A Validate response's by_source and by_label maps hold at most this many groups each: the
// ones with the most runs, ties broken by name (a store can hold many sources and labels).
inline constexpr size_t kMaxValidateGroups = 100;

}  // namespace scalecast

#endif  // SCALECAST_MODEL_LIMITS_H_
