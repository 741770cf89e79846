// The bounds on what a request may carry: one home for every layer (the model's checks, the
// store, the server's handlers, the CLI's flags). Beyond them a value is INVALID_ARGUMENT naming
// its field; they keep requests physical and bound the memory and time one call can take.
// Bounds an operator may tune (batch sizes, sweep limits) are ServerOptions, not here.
#ifndef SCALECAST_MODEL_LIMITS_H_
#define SCALECAST_MODEL_LIMITS_H_

#include <cstddef>
#include <cstdint>

namespace scalecast {

// --- A scenario ---------------------------------------------------------------------------------
inline constexpr int kMaxGpus = 1 << 20;
inline constexpr int kMaxSeqLen = 1 << 22;
inline constexpr int64_t kMaxGlobalBatch = int64_t{1} << 32;
inline constexpr int kMaxDim = 1 << 20;
inline constexpr int kMaxExpertParallel = 4096;  // ep and etp
// A model's shape (model/catalog.cc CheckModelFields).
inline constexpr int64_t kMaxModelDim = int64_t{1} << 20;  // widths and ranks
inline constexpr int64_t kMaxHeadDim = 4096;
inline constexpr int64_t kMaxExperts = 4096;
inline constexpr int64_t kMaxSharedExperts = 64;
inline constexpr int64_t kMaxWindow = kMaxSeqLen;
inline constexpr int64_t kMaxLayers = 4096;
inline constexpr double kMaxCapacityFactor = 16;
// Multi-token prediction modules (ModelSpec.mtp_layers): DeepSeek-V3 trains one; Megatron-Core
// takes any count, each on the last stage, so a count beyond a few is a mistake, not a plan.
inline constexpr int kMaxMtpLayers = 16;

// --- Strings
// --------------------------------------------------------------------------------------
inline constexpr size_t kMaxNameBytes = 256;  // ids, names, accelerator, framework, source
inline constexpr size_t kMaxLabelKeyBytes = 128;
inline constexpr size_t kMaxLabelValueBytes = 1024;
inline constexpr size_t kMaxLabels = 64;
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
