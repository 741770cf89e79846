// The command table, tokenising, help text and global options of the scalecast CLI.
#include "clients/cli/flags.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace scalecast::cli {
namespace {

struct FlagDef {
  const char* name;
  const char* value;  // "" for a boolean flag
  const char* help;
};

// Shared by every command.
const std::vector<FlagDef>& GlobalFlags() {
  static const auto* flags = new std::vector<FlagDef>{
      {"server", "ADDR", "server address host:port (env SCALECAST_SERVER; 127.0.0.1:50051)"},
      {"timeout", "SECONDS", "deadline for each call (default 60)"},
      {"token", "T", "bearer token for writes (env SCALECAST_TOKEN)"},
      {"tls", "", "connect with TLS, trusting the system's root certificates"},
      {"tls-ca", "FILE", "PEM root certificate(s) to trust (implies --tls)"},
      {"tls-server-name", "NAME", "server name to expect in its certificate (implies --tls)"},
      {"json", "", "print the response in protobuf's JSON mapping"},
      {"csv", "", "print CSV: a header and one row per item"},
      {"help", "", "print usage"},
  };
  return *flags;
}

const std::vector<FlagDef>& ScenarioFlags() {
  static const auto* flags = new std::vector<FlagDef>{
      {"request", "FILE.json",
       "a Scenario or {\"scenario\": ...} in protobuf JSON; flags override its fields"},
      {"model", "NAME", "model preset (see `scalecast models`) or a label for the shape below"},
      {"layers", "N", "transformer layers"},
      {"hidden", "N", "hidden size"},
      {"heads", "N", "attention heads"},
      {"kv-heads", "N", "key/value heads (grouped-query attention; default = heads)"},
      {"ffn-hidden", "N", "FFN inner size"},
      {"mlp", "gated|plain", "SwiGLU (three matrices) or GELU-style (two)"},
      {"vocab", "N", "vocabulary size"},
      {"seq", "N", "tokens per sequence (required)"},
      {"global-batch", "N", "sequences per optimizer step (required)"},
      {"precision", "P", "bf16|fp16|fp8|mxfp8|nvfp4 (default: bf16 where supported)"},
      {"accelerator", "ID", "catalog id, e.g. h100-sxm-80gb (see `scalecast accelerators`)"},
      {"gpus", "N", "number of GPUs"},
      {"gpus-per-node", "N", "GPUs per node (default: the accelerator's usual system)"},
      {"network-gbps", "X", "inter-node Gbit/s per GPU (default: the usual system's)"},
      {"tp", "N", "tensor-parallel degree (0 or auto: the planner picks; so for all layout flags)"},
      {"pp", "N", "pipeline-parallel degree"},
      {"vpp", "N", "virtual pipeline stages (interleave)"},
      {"cp", "N", "context-parallel degree"},
      {"dp", "N", "data-parallel degree"},
      {"sharding", "S", "ddp|zero1|zero2|fsdp|hsdp"},
      {"shard-group", "N", "HSDP shard group size"},
      {"micro-batch", "N", "sequences per micro-batch"},
      {"recompute", "R", "none|selective|full"},
      {"sequence-parallel", "", "sequence parallelism with TP (--sequence-parallel=false: off)"},
      {"framework", "NAME", "megatron, nemo, torchtitan, composer-fsdp, ... (default: generic)"},
      {"calibration", "NAME", "calibration profile (default: the built-in one)"},
      {"label", "TEXT", "your name for the scenario, echoed back"},
  };
  return *flags;
}

const std::vector<FlagDef>& FilterFlags() {
  static const auto* flags = new std::vector<FlagDef>{
      {"accelerator", "ID", "only runs on this accelerator"},
      {"framework", "NAME", "only runs of this framework"},
      {"source", "TEXT", "only runs from this source"},
      {"label", "KEY=VALUE", "only runs with this label (repeatable; all must match)"},
  };
  return *flags;
}

struct CommandDef {
  const char* name;
  const char* args;  // positional arguments in the synopsis
  const char* summary;
  const char* description;
  bool scenario = false;
  bool filter = false;
  std::vector<FlagDef> extra;
  size_t positionals = 0;
};

const std::vector<CommandDef>& Commands() {
  static const auto* commands = new std::vector<CommandDef>{
      {"predict",
       "[scenario flags]",
       "predict one scenario",
       "Predicts step time, throughput, MFU, the time, memory and power breakdowns of one\n"
       "scenario. --json prints the PredictResponse; --csv one flat row.\n"
       "Example:\n"
       "  scalecast predict --model llama2-70b --accelerator h100-sxm-80gb --gpus 2048 \\\n"
       "      --seq 4096 --global-batch 1024 --tp 2 --pp 2 --sharding zero1\n",
       true,
       false,
       {},
       0},
      {"compare",
       "[scenario flags with lists]",
       "predict scenarios side by side",
       "Predicts several scenarios and compares each with the first. Comma lists are accepted\n"
       "by --model --accelerator --gpus --tp --pp --vpp --cp --dp --micro-batch --sharding\n"
       "--recompute --precision --seq --global-batch --gpus-per-node --network-gbps --framework\n"
       "--calibration; several lists give their cartesian product, the first flag given varying\n"
       "slowest. --request may be repeated (each file a Scenario, {\"scenario\": ...} or\n"
       "{\"scenarios\": [...]}); the flags apply to every file's scenarios.\n"
       "Delta columns against the first: throughput ratio, per-GPU throughput ratio, scaling\n"
       "efficiency (throughput ratio / GPU ratio), W/GPU ratio, J/token ratio, MFU difference in\n"
       "percentage points. --json prints the CompareResponse.\n"
       "Example:\n"
       "  scalecast compare --model llama2-70b --accelerator h100-sxm-80gb --seq 4096 \\\n"
       "      --global-batch 1024 --gpus 128,512,2048\n",
       true,
       false,
       {},
       0},
      {"sweep",
       "--gpus N,N,... [scenario flags]",
       "search layouts for each GPU count",
       "Searches every layout the scenario leaves open (layout flags you give are fixed) for\n"
       "each GPU count, streaming progress (a bar on stderr when it is a terminal), then prints\n"
       "the best layout per GPU count.\n"
       "Diminishing returns: the row marked '<- diminishing returns' is the first GPU count\n"
       "(ascending, counts with a feasible layout) where either the tokens/s gained per added\n"
       "GPU falls below half of what the first step gained per added GPU, or the scaling\n"
       "efficiency against the smallest count ((tokens/s ratio) / (GPU ratio)) falls below 70%.\n"
       "--json prints {\"results\": [SweepResult...], \"diminishingReturnsGpuCount\": N} (0 =\n"
       "none).\n"
       "Example:\n"
       "  scalecast sweep --model llama2-70b --accelerator h100-sxm-80gb --seq 4096 \\\n"
       "      --global-batch 1024 --gpus 64,128,256,512,1024,2048 --plot scaling.svg\n",
       true,
       false,
       {{"gpus", "N,N,...", "the GPU counts to search (default: the --request file's count)"},
        {"top-k", "N", "keep the N best layouts per GPU count and list them (server default 5)"},
        {"objective", "O", "throughput|energy: rank layouts by tokens/s or joules per token"},
        {"refresh", "", "recompute even when the sweep is cached"},
        {"max-layouts", "N", "refuse a GPU count with more layouts than this"},
        {"plot", "FILE.svg", "write an SVG plot: tokens/s (total, per GPU) and J/token"}},
       0},
      {"measurements import",
       "FILE.csv",
       "record measured runs from a CSV file",
       "Reads a CSV file with the columns of shared/data/calibration.csv and records every row\n"
       "in one all-or-nothing batch. A bad row is reported by line and column and nothing is\n"
       "recorded (exit 2). --json prints the RecordMeasurementsResponse.\n",
       false,
       false,
       {},
       1},
      {"measurements list",
       "",
       "list stored runs",
       "Lists stored runs, one page at a time (--all follows every page). --csv prints the\n"
       "import format's columns (plus step_time_s, watts_per_gpu, recorded_at), so the output\n"
       "can be imported again. --json prints the ListMeasurementsResponse (all pages merged).\n",
       false,
       true,
       {{"page-size", "N", "runs per page (server default 100, at most 1000)"},
        {"page-token", "T", "continue from this page token"},
        {"all", "", "follow every page"}},
       0},
      {"measurements delete",
       "ID",
       "delete a stored run",
       "Deletes the stored run with this id.\n",
       false,
       false,
       {},
       1},
      {"validate",
       "[filters]",
       "the model's error on stored runs",
       "Predicts every stored run matching the filters and prints the mean and median absolute\n"
       "percentage error overall, per framework and per accelerator. --json prints the\n"
       "ValidateResponse.\n",
       false,
       true,
       {{"calibration", "NAME", "calibration profile to validate (default: the built-in one)"},
        {"rows", "", "also print one row per run"}},
       0},
      {"calibrate",
       "--name NAME [filters]",
       "fit a calibration profile",
       "Fits the model's efficiency parameters to the stored runs matching the filters and\n"
       "stores them as profile NAME; prints the error before and after, the cross-validated\n"
       "error when asked, and the fitted parameters. --json prints the CalibrateResponse.\n",
       false,
       true,
       {{"name", "NAME", "profile to create or replace (required; not \"default\")"},
        {"start-from", "NAME", "profile to start from (default: the documented priors)"},
        {"cross-validate", "", "also report leave-group-out cross-validated error"}},
       0},
      {"accelerators",
       "",
       "list the accelerator catalog",
       "Lists the accelerators the server knows. --json prints the ListAcceleratorsResponse.\n",
       false,
       false,
       {},
       0},
      {"models",
       "",
       "list the model presets",
       "Lists the model presets the server knows. --json prints the ListModelsResponse.\n",
       false,
       false,
       {},
       0},
      {"health",
       "",
       "check the server's health",
       "Calls grpc.health.v1.Health/Check and prints SERVING or NOT_SERVING. Exits 0 only when\n"
       "SERVING, else 3 (fit for a Docker HEALTHCHECK).\n",
       false,
       false,
       {{"service", "NAME", "service to check (default \"\": the whole server)"}},
       0},
  };
  return *commands;
}

const CommandDef* FindCommand(const std::string& name) {
  for (const CommandDef& c : Commands()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

// Every flag a command accepts.
std::vector<const FlagDef*> FlagsOf(const CommandDef& c) {
  std::vector<const FlagDef*> out;
  std::set<std::string> seen;
  auto add = [&](const std::vector<FlagDef>& defs) {
    for (const FlagDef& f : defs) {
      if (seen.insert(f.name).second) out.push_back(&f);
    }
  };
  add(c.extra);
  if (c.scenario) add(ScenarioFlags());
  if (c.filter) add(FilterFlags());
  add(GlobalFlags());
  return out;
}

// Any definition of `name`; arity is the same wherever a name appears.
const FlagDef* FindAnyFlag(const std::string& name) {
  for (const auto* defs : {&GlobalFlags(), &ScenarioFlags(), &FilterFlags()}) {
    for (const FlagDef& f : *defs) {
      if (name == f.name) return &f;
    }
  }
  for (const CommandDef& c : Commands()) {
    for (const FlagDef& f : c.extra) {
      if (name == f.name) return &f;
    }
  }
  return nullptr;
}

void AppendFlags(std::string* out, const std::string& title,
                 const std::vector<const FlagDef*>& flags) {
  if (flags.empty()) return;
  absl::StrAppend(out, "\n", title, ":\n");
  for (const FlagDef* f : flags) {
    std::string left = absl::StrCat("  --", f->name);
    if (*f->value != '\0') absl::StrAppend(&left, " ", f->value);
    if (left.size() < 28) {
      left.resize(28, ' ');
      absl::StrAppend(out, left, f->help, "\n");
    } else {
      absl::StrAppend(out, left, "\n", std::string(28, ' '), f->help, "\n");
    }
  }
}

std::vector<const FlagDef*> Pointers(const std::vector<FlagDef>& defs) {
  std::vector<const FlagDef*> out;
  for (const FlagDef& f : defs) out.push_back(&f);
  return out;
}

absl::Status Usage(const std::string& message) { return absl::InvalidArgumentError(message); }

}  // namespace

bool ParsedArgs::Has(const std::string& name) const { return Last(name) != nullptr; }

const std::string* ParsedArgs::Last(const std::string& name) const {
  const std::string* v = nullptr;
  for (const auto& [k, value] : flags) {
    if (k == name) v = &value;
  }
  return v;
}

std::vector<std::string> ParsedArgs::All(const std::string& name) const {
  std::vector<std::string> out;
  for (const auto& [k, value] : flags) {
    if (k == name) out.push_back(value);
  }
  return out;
}

bool IsCommand(const std::string& command) { return FindCommand(command) != nullptr; }

absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args) {
  ParsedArgs out;
  std::vector<std::string> words;
  bool only_positionals = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (only_positionals || a == "-" || a.empty() || a[0] != '-') {
      words.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positionals = true;
      continue;
    }
    if (a == "-h") {
      out.help = true;
      continue;
    }
    if (!absl::StartsWith(a, "--")) return Usage(absl::StrCat("unknown flag '", a, "'"));
    std::string name = a.substr(2);
    std::string value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
      has_value = true;
    }
    const FlagDef* def = FindAnyFlag(name);
    if (def == nullptr) return Usage(absl::StrCat("unknown flag --", name));
    if (*def->value != '\0') {
      if (!has_value) {
        if (i + 1 >= args.size() || absl::StartsWith(args[i + 1], "--")) {
          return Usage(absl::StrCat("--", name, " needs a value (", def->value, ")"));
        }
        value = args[++i];
      }
    } else {
      if (has_value) {
        absl::StatusOr<bool> b = ParseBoolFlag("--" + name, value);
        if (!b.ok()) return b.status();
        value = *b ? "true" : "false";
      } else {
        value = "true";
      }
    }
    if (name == "help") {
      out.help = value == "true";
      continue;
    }
    out.flags.emplace_back(name, value);
  }

  size_t next = 0;
  if (next < words.size() && words[next] == "help") {
    out.help = true;
    ++next;
  }
  if (next < words.size()) {
    std::string command = words[next++];
    if (command == "measurements") {
      if (next < words.size() &&
          (words[next] == "import" || words[next] == "list" || words[next] == "delete")) {
        command = absl::StrCat(command, " ", words[next++]);
      } else if (!out.help) {
        return Usage(next < words.size()
                         ? absl::StrCat("unknown measurements command '", words[next],
                                        "' (import, list or delete)")
                         : "measurements needs a command: import FILE.csv, list or delete ID");
      }
    } else if (!IsCommand(command)) {
      return Usage(absl::StrCat("unknown command '", command, "'"));
    }
    out.command = command;
  }
  out.positionals.assign(words.begin() + static_cast<std::ptrdiff_t>(next), words.end());
  if (out.command.empty() || out.command == "measurements") {
    if (!out.help) return Usage("no command given");
    for (const auto& [name, value] : out.flags) {
      bool global = false;
      for (const FlagDef& f : GlobalFlags()) global |= name == f.name;
      if (!global) return Usage(absl::StrCat("--", name, " needs a command"));
    }
    return out;
  }
  const CommandDef& c = *FindCommand(out.command);
  std::set<std::string> allowed;
  for (const FlagDef* f : FlagsOf(c)) allowed.insert(f->name);
  for (const auto& [name, value] : out.flags) {
    if (allowed.count(name) == 0) {
      return Usage(absl::StrCat("--", name, " is not a flag of '", out.command, "'"));
    }
  }
  if (out.help) return out;
  if (out.positionals.size() > c.positionals) {
    return Usage(absl::StrCat("unexpected argument '", out.positionals[c.positionals], "'"));
  }
  if (out.positionals.size() < c.positionals) {
    return Usage(absl::StrCat("'", out.command, "' needs ", c.args));
  }
  return out;
}

std::string Usage() {
  std::string out =
      "scalecast: predicts LLM-training performance (step time, tokens/s, MFU, memory,\n"
      "exposed communication, power) from a scalecast server.\n\n"
      "usage: scalecast COMMAND [flags]   (flags may come before or after the command)\n\n"
      "Commands:\n";
  for (const CommandDef& c : Commands()) {
    std::string left = absl::StrCat("  ", c.name, *c.args != '\0' ? " " : "", c.args);
    if (left.size() < 41) {
      left.resize(42, ' ');
      absl::StrAppend(&out, left, c.summary, "\n");
    } else {
      absl::StrAppend(&out, left, "\n", std::string(42, ' '), c.summary, "\n");
    }
  }
  AppendFlags(&out, "Global flags", Pointers(GlobalFlags()));
  absl::StrAppend(&out,
                  "\nExit status: 0 success; 2 usage error (bad flags, values or files); 3 the\n"
                  "server refused the request or could not be reached.\n"
                  "Run 'scalecast COMMAND --help' for a command's flags.\n");
  return out;
}

std::string CommandUsage(const std::string& command) {
  if (command == "measurements") {
    std::string out = "usage: scalecast measurements import FILE.csv | list | delete ID\n\n";
    for (const char* sub : {"measurements import", "measurements list", "measurements delete"}) {
      const CommandDef& c = *FindCommand(sub);
      absl::StrAppend(&out, "  ", c.name, *c.args != '\0' ? " " : "", c.args, "\n      ", c.summary,
                      "\n");
    }
    absl::StrAppend(&out, "\nRun 'scalecast measurements COMMAND --help' for its flags.\n");
    return out;
  }
  const CommandDef* c = FindCommand(command);
  if (c == nullptr) return Usage();
  std::string out = absl::StrCat("usage: scalecast ", c->name, *c->args != '\0' ? " " : "", c->args,
                                 " [flags]\n\n", c->description);
  AppendFlags(&out, absl::StrCat(c->name, " flags"), Pointers(c->extra));
  if (c->scenario) {
    std::vector<const FlagDef*> flags;
    for (const FlagDef& f : ScenarioFlags()) {
      bool overridden = false;
      for (const FlagDef& e : c->extra) overridden |= std::string(e.name) == f.name;
      if (!overridden) flags.push_back(&f);
    }
    AppendFlags(&out, "Scenario flags", flags);
  }
  if (c->filter) {
    std::vector<const FlagDef*> flags;
    for (const FlagDef& f : FilterFlags()) {
      bool overridden = false;
      for (const FlagDef& e : c->extra) overridden |= std::string(e.name) == f.name;
      if (!overridden) flags.push_back(&f);
    }
    AppendFlags(&out, "Filters", flags);
  }
  AppendFlags(&out, "Global flags", Pointers(GlobalFlags()));
  return out;
}

absl::StatusOr<GlobalOptions> GetGlobalOptions(const ParsedArgs& args, const Env& env) {
  GlobalOptions o;
  auto getenv = [&](const char* name) -> std::string {
    if (!env.getenv) return "";
    const char* v = env.getenv(name);
    return v == nullptr ? "" : v;
  };
  if (std::string v = getenv("SCALECAST_SERVER"); !v.empty()) o.server = v;
  if (const std::string* v = args.Last("server")) {
    if (v->empty()) return Usage("--server: needs an address host:port");
    o.server = *v;
  }
  if (const std::string* v = args.Last("timeout")) {
    absl::StatusOr<double> t = ParseDoubleFlag("--timeout", *v, 1e-3, 1e7);
    if (!t.ok()) return t.status();
    o.timeout_s = *t;
  }
  o.token = getenv("SCALECAST_TOKEN");
  if (const std::string* v = args.Last("token")) o.token = *v;
  if (const std::string* v = args.Last("tls")) o.tls = *v == "true";
  if (const std::string* v = args.Last("tls-ca")) {
    if (v->empty()) return Usage("--tls-ca: needs a file");
    o.tls_ca_file = *v;
    o.tls = true;
  }
  if (const std::string* v = args.Last("tls-server-name")) {
    if (v->empty()) return Usage("--tls-server-name: needs a name");
    o.tls_server_name = *v;
    o.tls = true;  // the name only matters for TLS
  }
  const bool json = args.Has("json") && *args.Last("json") == "true";
  const bool csv = args.Has("csv") && *args.Last("csv") == "true";
  if (json && csv) return Usage("--json and --csv are exclusive");
  o.format = json ? OutputFormat::kJson : csv ? OutputFormat::kCsv : OutputFormat::kTable;
  return o;
}

absl::StatusOr<bool> ParseBoolFlag(const std::string& flag, const std::string& value) {
  const std::string v = absl::AsciiStrToLower(value);
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  return Usage(absl::StrCat(flag, ": '", value, "' is not true or false"));
}

bool IsScenarioFlag(const std::string& name) {
  for (const FlagDef& f : ScenarioFlags()) {
    if (name == f.name) return true;
  }
  return false;
}

}  // namespace scalecast::cli
