// A Hugging Face config.json mapped onto the model's ModelSpec: the one parser of
// ModelSpec.hf_config_json (the CLI and the Python client send the file's bytes). The families
// it knows and the keys it reads are listed in README.md ("Models from their config.json").
#ifndef SCALECAST_SERVER_HF_CONFIG_H_
#define SCALECAST_SERVER_HF_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/limits.h"
#include "model/types.h"

namespace scalecast {

struct HfModel {
  ModelSpec spec;  // every shape field the config gives; name = "<model_type> (config.json)"
  std::vector<std::string> warnings;  // keys not used, approximations made
};

// Parses `json` and maps its keys by model_type. Errors are INVALID_ARGUMENT and start with
// `path` and the key: "scenario.workload.model.hf_config_json: num_attention_heads: -1 is out
// of range [1, 16384]". Keys the mapping does not read are named in `warnings`, never dropped
// silently.
absl::StatusOr<HfModel> ParseHfConfig(absl::string_view json, absl::string_view path);

}  // namespace scalecast

#endif  // SCALECAST_SERVER_HF_CONFIG_H_
