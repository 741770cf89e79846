// Command-line parsing for the scalecast CLI: the command table (parsed with CLI11), help text,
// required flags, and turning flags (and --request files) into scalecast.v1 messages. No I/O
// beyond reading the files named by flags; no gRPC.
#ifndef SCALECAST_CLIENTS_CLI_FLAGS_H_
#define SCALECAST_CLIENTS_CLI_FLAGS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/scalecast/v1/scalecast.pb.h"

namespace scalecast::cli {

namespace pb = ::scalecast::v1;

// What the process sees of its environment; injected so tests control it.
struct Env {
  std::function<const char*(const char*)> getenv;  // null = an empty environment
  bool stderr_is_tty = false;                      // draw the sweep progress bar on `err`
};

enum class OutputFormat { kTable, kJson, kCsv };

// The command line, tokenised. Flags may appear anywhere, before or after the command words.
struct ParsedArgs {
  std::string command;                                     // "predict", "measurements import", ...
  std::vector<std::string> positionals;                    // after the command words
  std::vector<std::pair<std::string, std::string>> flags;  // in order, without "--"; bools "true"
  bool help = false;                                       // --help or `help` was given
  std::string help_text;                                   // then: the usage to print

  bool Has(const std::string& name) const;
  // The last value given for `name`, or null.
  const std::string* Last(const std::string& name) const;
  std::vector<std::string> All(const std::string& name) const;
};

// Parses with CLI11: one subcommand per command (`measurements` has import, list and delete).
// Usage errors are INVALID_ARGUMENT with a message naming the flag. --help anywhere, or `help`
// first, is not an error: `help` is then true and `help_text` the innermost command's usage.
absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args);

// Overall usage (`scalecast --help`) and one command's (`scalecast predict --help`).
std::string Usage();
std::string CommandUsage(const std::string& command);
bool IsCommand(const std::string& command);
// "usage: scalecast predict --model NAME --accelerator ID --gpus N --seq N ... [flags]".
std::string CommandSynopsis(const std::string& command);

struct GlobalOptions {
  std::string server = "127.0.0.1:50051";
  double timeout_s = 60;
  std::string token;
  bool tls = false;
  std::string tls_ca_file;
  std::string tls_server_name;
  OutputFormat format = OutputFormat::kTable;
  bool wide = false;  // tables: every column, however wide
};

absl::StatusOr<GlobalOptions> GetGlobalOptions(const ParsedArgs& args, const Env& env);

// Reads a --request file: a Scenario, a PredictRequest {"scenario": ...}, or (when
// `allow_many`) a CompareRequest {"scenarios": [...]}, in protobuf's JSON mapping.
absl::StatusOr<std::vector<pb::Scenario>> ReadRequestFile(const std::string& path, bool allow_many);

// The scenarios the flags describe: each --request file (or one empty scenario), with the
// scenario flags applied over it. With `allow_lists`, comma lists in list-capable flags expand to
// the cartesian product in the order the flags were given; without, a list is a usage error.
// Flags named in `skip` are left alone (sweep's --gpus is a list of counts, not a field).
absl::StatusOr<std::vector<pb::Scenario>> BuildScenarios(const ParsedArgs& args, bool allow_lists,
                                                         const std::vector<std::string>& skip = {});

// A usage error naming the flags the scenarios still lack after --request files and flags:
// "--seq is required", "--model, --seq and --global-batch are required". `need_gpus` is false
// for sweep, whose --gpus list is checked by itself.
absl::Status CheckRequired(const std::vector<pb::Scenario>& scenarios, bool need_gpus);

// --accelerator, --framework, --source and repeatable --label k=v.
absl::StatusOr<pb::MeasurementFilter> BuildFilter(const ParsedArgs& args);

// True for the flags that set scenario fields (--model, --tp, ..., --request).
bool IsScenarioFlag(const std::string& name);

// Flag value parsers; errors name the flag ("--tp: 'x' is not an integer").
// An integer may be written as a whole double ("16e6").
absl::StatusOr<int64_t> ParseIntFlag(const std::string& flag, const std::string& value, int64_t lo,
                                     int64_t hi);
absl::StatusOr<double> ParseDoubleFlag(const std::string& flag, const std::string& value, double lo,
                                       double hi);
// true/false, 1/0, yes/no, on/off.
absl::StatusOr<bool> ParseBoolFlag(const std::string& flag, const std::string& value);
// "128,512,2048" -> {128, 512, 2048}; each item in [lo, hi].
absl::StatusOr<std::vector<int64_t>> ParseIntList(const std::string& flag, const std::string& value,
                                                  int64_t lo, int64_t hi);

}  // namespace scalecast::cli

#endif  // SCALECAST_CLIENTS_CLI_FLAGS_H_
