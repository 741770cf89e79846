// The command table, its CLI11 app (subcommands, help, the glossary) and the global options.
#include "clients/cli/flags.h"

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "clients/cli/scenario_fields.h"

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
      {"wide", "", "tables: every column (default: what fits 120 columns)"},
      {"help", "", "print usage"},
  };
  return *flags;
}

// --request, then one flag per field the proto gives one (clients/cli/scenario_fields.h).
const std::vector<FlagDef>& ScenarioFlags() {
  static const auto* flags = [] {
    auto* out = new std::vector<FlagDef>{
        {"request", "FILE.json",
         "a Scenario or {\"scenario\": ...} in protobuf JSON; flags override its fields"}};
    for (const FieldFlag& f : ScenarioFields()) {
      out->push_back({f.ui->flag().c_str(), f.value_name.c_str(), f.ui->help().c_str()});
    }
    return out;
  }();
  return *flags;
}

// `plan`'s own: one flag per field of PlanRequest and PlanCandidate the proto gives one
// (clients/cli/scenario_fields.h PlanFields), with --accelerators and --svg.
std::vector<FlagDef> PlanFlags() {
  std::vector<FlagDef> out = {
      {"accelerators", "ID[=PRICE],...", "candidates, each with its price per GPU-hour"}};
  for (const auto* fields : {&PlanFields(), &PlanCandidateFields()}) {
    for (const FieldFlag& f : *fields) {
      out.push_back({f.ui->flag().c_str(), f.value_name.c_str(), f.ui->help().c_str()});
    }
  }
  out.push_back({"svg", "FILE.svg", "write an SVG of days against cost"});
  return out;
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

// Which flags take comma lists in `compare`: those whose proto field has the `list` option.
const char* CompareListsText() {
  static const auto* text = [] {
    std::vector<std::string> words = {"Predicts", "several", "scenarios", "and",    "compares",
                                      "each",     "with",    "the",       "first.", "Comma",
                                      "lists",    "are",     "accepted",  "by"};
    for (const FieldFlag& f : ScenarioFields()) {
      if (f.ui->list()) words.push_back("--" + f.ui->flag());
    }
    words.back() += ";";
    for (const char* w : {"several",   "lists",     "give",
                          "their",     "cartesian", "product,",
                          "the",       "first",     "flag",
                          "given",     "varying",   "slowest.",
                          "--request", "may",       "be",
                          "repeated",  "(each",     "file",
                          "a",         "Scenario,", "{\"scenario\":",
                          "...}",      "or",        "{\"scenarios\":",
                          "[...]});",  "the",       "flags",
                          "apply",     "to",        "every",
                          "file's",    "scenarios."}) {
      words.push_back(w);
    }
    auto* out = new std::string;
    size_t line = 0;
    for (const std::string& w : words) {  // wrapped at 90 columns, as the other descriptions
      if (line > 0 && line + 1 + w.size() > 90) {
        *out += "\n";
        line = 0;
      }
      if (line > 0) {
        *out += " ";
        ++line;
      }
      *out += w;
      line += w.size();
    }
    *out += "\n";
    return out;
  }();
  return text->c_str();
}

struct CommandDef {
  const char* name;
  const char* args;  // positional arguments in the synopsis
  const char* summary;
  std::string description;
  bool scenario = false;
  bool filter = false;
  std::vector<FlagDef> extra;
  size_t positionals = 0;
};

const std::vector<CommandDef>& Commands() {
  static const auto* commands = new std::vector<CommandDef>{
      {"predict",
       "--model NAME --accelerator ID --gpus N --seq N --global-batch N",
       "predict one scenario",
       "Predicts step time, throughput, MFU, the time, memory and power breakdowns of one\n"
       "scenario, after the scenario as the server resolved it (the preset's shape, default\n"
       "precision, node size and network filled in). Layout flags left out are chosen by the\n"
       "planner. --json prints the PredictResponse (its `scenario` is the resolved one); --csv\n"
       "one flat row. A scenario with no layout that works names the nearest GPU counts, global\n"
       "batches and micro batches that do.\n"
       "Example:\n"
       "  scalecast predict --model llama2-70b --accelerator h100-sxm-80gb --gpus 2048 \\\n"
       "      --seq 4096 --global-batch 1024 --tp 2 --pp 2 --sharding zero1\n",
       true,
       false,
       {},
       0},
      {"compare",
       "--model NAME --accelerator ID --gpus N,N,... --seq N --global-batch N",
       "predict scenarios side by side",
       absl::StrCat(
           CompareListsText(),
           "Delta columns against the first: throughput ratio, per-GPU throughput ratio, scaling\n"
           "efficiency (throughput ratio / GPU ratio; only for a different GPU count), W/GPU "
           "ratio,\n"
           "J/token ratio, MFU difference in percentage points (--wide for all of them).\n"
           "--json prints the CompareResponse (its `scenarios` are the resolved ones).\n"
           "Example:\n"
           "  scalecast compare --model llama2-70b --accelerator h100-sxm-80gb --seq 4096 \\\n"
           "      --global-batch 1024 --gpus 128,512,2048\n"),
       true,
       false,
       {},
       0},
      {"sweep",
       "--model NAME --accelerator ID --gpus N,N,... --seq N --global-batch N",
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
      {"plan", "--model NAME --seq N --tokens T --accelerators ID[=PRICE],...",
       "time to train, cost and failures across accelerators",
       "For each accelerator and GPU count (--gpus, or searched: powers of two from 8 and\n"
       "NVLink-domain multiples up to --max-gpus or 16,384), the best layout and global batch\n"
       "(--global-batch fixed, or chosen within --max-batch-tokens, default 4M tokens), its\n"
       "wall clock once interruptions and checkpoints are paid for (goodput), GPU-hours, MWh\n"
       "(the GPUs' draw x PUE), cost (GPU-hours x price + energy x --electricity-price) and\n"
       "whether it meets the constraints. Options are ranked by cost (GPU-hours when some\n"
       "accelerator has no price), those meeting the constraints first; flags: ok (meets them),\n"
       "pareto (no option is both faster and cheaper), smallest (its accelerator's smallest\n"
       "count that meets them). Then the speedup and extra cost of each doubling, and the\n"
       "defaults used with their sources. Layout flags (--tp ...) fix those fields.\n"
       "--json prints the last PlanResponse; --csv one row per option; --svg FILE plots days\n"
       "against cost.\n"
       "Example:\n"
       "  scalecast plan --model llama3-70b --seq 8192 --tokens 15e12 --max-batch-tokens 16e6 \\\n"
       "      --accelerators h100-sxm-80gb=2.5,b200-sxm-180gb=4.5 --deadline-days 90\n",
       true, false, PlanFlags(), 0},
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
      {"profiles list",
       "",
       "list stored calibration profiles",
       "Lists the stored calibration profiles: name, runs fitted on, error before and after,\n"
       "when. --json prints the ListProfilesResponse.\n",
       false,
       false,
       {},
       0},
      {"profiles show",
       "NAME",
       "show one calibration profile",
       "Prints one stored profile: what it was fitted on, its errors and its parameters.\n"
       "--json prints the CalibrationProfile.\n",
       false,
       false,
       {},
       1},
      {"profiles delete",
       "NAME",
       "delete a calibration profile",
       "Deletes the stored profile NAME (needs the token when the server has one).\n",
       false,
       false,
       {},
       1},
      {"validate",
       "[filters]",
       "the model's error on stored runs",
       "Predicts every stored run matching the filters and prints the mean and median absolute\n"
       "percentage error overall, per framework, accelerator, source and label (key=value;\n"
       "the server sends the 100 sources and labels with the most runs; the tables show the\n"
       "20 with the most and cut long names with ... unless --wide). --json prints the\n"
       "ValidateResponse, --csv every group sent.\n",
       false,
       true,
       {{"calibration", "NAME", "calibration profile to validate (default: the built-in one)"},
        {"rows", "", "also print one row per run"}},
       0},
      {"calibrate",
       "--name NAME [filters]",
       "fit a calibration profile",
       "Fits a layer over --start-from to the stored runs matching the filters: only the\n"
       "parameters those runs inform move (fewer runs, fewer parameters), and the layer is\n"
       "stored as profile NAME only when it beats its start on held-out runs (leave-one-out).\n"
       "Prints whether it was taken and why, the changed parameters old -> new, and the error\n"
       "on the fitted runs and on all other stored runs, before and after. --json prints the\n"
       "CalibrateResponse.\n",
       false,
       true,
       {{"name", "NAME", "profile to create (required; not \"default\"; see --replace)"},
        {"start-from", "NAME", "profile to layer on (default: the built-in profile)"},
        {"cross-validate", "", "kept for old scripts: the held-out check always runs"},
        {"replace", "", "overwrite profile NAME if it exists (else that is an error)"}},
       0},
      {"accelerators",
       "",
       "list the accelerator catalog",
       "Lists the accelerators the server knows: the catalog's and those registered (origin).\n"
       "--json prints the ListAcceleratorsResponse. `accelerators add FILE.json` registers one,\n"
       "`accelerators delete ID` removes it.\n",
       false,
       false,
       {},
       0},
      {"accelerators add",
       "FILE.json",
       "register an accelerator you describe",
       "Registers the AcceleratorSpec in FILE.json (JSON of the proto message: id, like,\n"
       "peak_tflops_bf16, hbm_gb, ...; set fields override the `like` part's) in the server's\n"
       "store, shared by every replica; its id is then usable wherever an accelerator is.\n"
       "Prints the resolved part. --json prints the RegisterAcceleratorResponse.\n",
       false,
       false,
       {{"replace", "", "overwrite a registered accelerator of the same id"}},
       1},
      {"accelerators delete",
       "ID",
       "delete a registered accelerator",
       "Deletes the registered accelerator ID (needs the token when the server has one).\n",
       false,
       false,
       {},
       1},
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

absl::Status Usage(const std::string& message) { return absl::InvalidArgumentError(message); }

// Shown by `--help` of the root and of the scenario commands, and in the README.
constexpr char kGlossary[] =
    "Glossary (tables and layouts):\n"
    "  layout   tp2 pp4 vpp4 cp2 dp64 ep8 etp2 zero1 mb1 rc=none sp: tensor, pipeline, virtual\n"
    "           pipeline, context, data, expert and expert-tensor parallel degrees (vpp, cp,\n"
    "           ep, etp shown when above 1), sharding, micro batch, activation recompute,\n"
    "           sequence parallelism (sp: on)\n"
    "  tp pp cp dp  tensor / pipeline / context / data parallel degree\n"
    "  ep etp   expert parallel (routed experts split over ep ranks) / expert-tensor parallel\n"
    "           (each expert's GEMMs split over etp ranks); mixture-of-experts models only\n"
    "  vpp      virtual pipeline stages per GPU (interleaved 1F1B)\n"
    "  a2aN     two-level context parallelism (a2a+p2p): all-to-all groups of N ranks, the\n"
    "           ring between them (cp16 a2a4: four groups of four)\n"
    "  sp       sequence parallelism: norms and dropout split over the TP group\n"
    "  ddp zero1 zero2 fsdp hsdpN  replicated; optimizer / + gradients / everything sharded;\n"
    "           hybrid: fully sharded within groups of N, replicated across them\n"
    "  mb       micro batch: sequences per forward/backward pass on one GPU\n"
    "  rc       activation recompute: none, sel (selective: attention only), full, full on N\n"
    "           layers of each pipeline stage (rc=full:4), or the selective modules\n"
    "           recomputed, joined by + (rc=mla_up_proj+moe_act)\n"
    "  MFU      model FLOPs utilisation: model FLOPs per second / the GPU's dense peak\n"
    "  HFU      hardware FLOPs utilisation: as MFU, counting recomputed FLOPs too\n"
    "  exposed  communication time not hidden behind compute (on the critical path)\n"
    "  hidden   the share of a collective's time overlapped with compute\n"
    "  bubble   pipeline idle time while stages fill and drain\n"
    "  J/token  GPU energy per trained token; W/GPU: average power per GPU\n"
    "  scaling eff  (throughput ratio) / (GPU-count ratio) against the first row\n"
    "  80% band the range of tokens/s per GPU that 8 in 10 runs like this one fall in\n";

// One synopsis line per command: what `scalecast CMD` needs.
std::string Synopsis(const CommandDef& c) {
  return absl::StrCat("usage: scalecast ", c.name, *c.args != '\0' ? " " : "", c.args, " [flags]");
}

// Lists subcommands by the first line of their description (the summary); a command's own
// --help prints all of it.
class Formatter : public CLI::Formatter {
 public:
  std::string make_subcommand(const CLI::App* sub) const override {
    const std::string& d = sub->get_description();
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true), d.substr(0, d.find('\n')),
                             column_width_);
    return out.str();
  }
};

// A CLI11 app for the whole command line, built from the tables above. Options keep every
// occurrence (the last wins, except the repeatable --request and --label) and take exactly one
// value; flags take none or `=value`.
class AppBuilder {
 public:
  std::unique_ptr<CLI::App> Build() {
    auto app = std::make_unique<CLI::App>(
        "scalecast: predicts LLM-training performance (step time, tokens/s, MFU, memory,\n"
        "exposed communication, power) from a scalecast server.",
        "scalecast");
    app->formatter(std::make_shared<Formatter>());
    app->fallthrough();
    app->require_subcommand(0, 1);
    app->footer(absl::StrCat(
        "Exit status: 0 success; 2 usage error (bad flags, values or files); 3 the server\n"
        "refused the request or could not be reached.\n"
        "Run 'scalecast COMMAND --help' for a command's flags.\n\n",
        kGlossary));
    AddFlags(app.get(), GlobalFlags(), "Global flags", {});
    std::map<std::string, CLI::App*> groups;
    for (const CommandDef& c : Commands()) {
      CLI::App* parent = app.get();
      std::string name = c.name;
      if (const size_t space = name.find(' '); space != std::string::npos) {
        const std::string group = name.substr(0, space);
        CLI::App*& g = groups[group];
        if (g == nullptr) {
          // A command that is also a group ("accelerators", "accelerators add").
          for (CLI::App* existing : app->get_subcommands([](CLI::App*) { return true; })) {
            if (existing->get_name() == group) g = existing;
          }
        }
        if (g == nullptr) {
          g = app->add_subcommand(group, group == "measurements"
                                             ? "record, list or delete measured runs"
                                             : "list, show or delete calibration profiles");
          g->require_subcommand(0, 1);
          g->fallthrough();
        }
        parent = g;
        name = name.substr(space + 1);
      }
      CLI::App* sub = parent->add_subcommand(name, c.summary);
      sub->fallthrough();
      sub->description(absl::StrCat(c.summary, "\n", Synopsis(c), "\n\n", c.description));
      std::set<std::string> taken;
      AddFlags(sub, c.extra, absl::StrCat(c.name, " flags"), {});
      for (const FlagDef& f : c.extra) taken.insert(f.name);
      std::string footer =
          "Global flags (before or after the command; `scalecast --help`): --server ADDR,\n"
          "--timeout SECONDS, --token T, --tls, --tls-ca FILE, --tls-server-name NAME, --json,\n"
          "--csv, --wide.\n";
      if (c.scenario) {
        AddFlags(sub, ScenarioFlags(), "Scenario", taken);
        absl::StrAppend(&footer, "\n", kGlossary);
      }
      sub->footer(footer);
      if (c.filter) AddFlags(sub, FilterFlags(), "Filters", taken);
      if (c.positionals > 0) {
        sub->add_option(c.args)->description(c.args)->expected(1)->required();
      }
      commands_[sub] = &c;
    }
    return app;
  }

  const std::map<const CLI::App*, const CommandDef*>& commands() const { return commands_; }

 private:
  void AddFlags(CLI::App* app, const std::vector<FlagDef>& defs, const std::string& group,
                const std::set<std::string>& skip) {
    for (const FlagDef& f : defs) {
      if (skip.count(f.name) > 0 || std::string(f.name) == "help") continue;
      CLI::Option* o;
      if (*f.value == '\0') {
        o = app->add_flag(absl::StrCat("--", f.name));
      } else {
        o = app->add_option(absl::StrCat("--", f.name));
        o->type_name(f.value)->expected(1)->allow_extra_args(false);
      }
      o->description(f.help)->group(group)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    }
  }

  std::map<const CLI::App*, const CommandDef*> commands_;
};

// The innermost subcommand given on the command line.
CLI::App* Innermost(CLI::App* app) {
  while (!app->get_subcommands().empty()) app = app->get_subcommands().front();
  return app;
}

// Any definition of `name`; whether it takes a value is the same wherever a name appears.
const FlagDef* FindFlag(const std::string& name) {
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

// "--seq" when `value` is a flag of ours (a missing value would swallow the next flag).
bool LooksLikeFlag(const std::string& value) {
  if (!absl::StartsWith(value, "--")) return false;
  const std::string name = value.substr(2);
  return name == "help" || FindFlag(name.substr(0, name.find('='))) != nullptr;
}

// `scalecast help [COMMAND...]` is `scalecast [COMMAND...] --help`.
std::vector<std::string> WithHelpCommandExpanded(std::vector<std::string> argv) {
  if (!argv.empty() && argv.front() == "help") {
    argv.erase(argv.begin());
    argv.push_back("--help");
  }
  return argv;
}

// "--gpus --seq 4096": CLI11 would take "--seq" as the value; say what is missing instead.
absl::Status CheckFlagsHaveValues(const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (!absl::StartsWith(a, "--") || absl::StrContains(a, '=')) continue;
    const FlagDef* def = FindFlag(a.substr(2));
    if (def == nullptr || *def->value == '\0') continue;
    if (i + 1 == argv.size() || LooksLikeFlag(argv[i + 1])) {
      return Usage(absl::StrCat(a, " needs a value (", def->value, ")"));
    }
    ++i;
  }
  return absl::OkStatus();
}

// Runs CLI11 over `argv`: true when the command line asks for help, a usage error where CLI11
// refuses it. A help request wins over an incomplete command line (`measurements import
// --help`).
absl::StatusOr<bool> ParseWithCli11(CLI::App* app, const std::vector<std::string>& argv) {
  std::vector<std::string> reversed(argv.rbegin(), argv.rend());  // CLI11 consumes from the back
  try {
    app->parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return true;
  } catch (const CLI::ParseError& e) {
    for (const std::string& a : argv) {
      if (a == "--help" || a == "-h") return true;
    }
    std::string message = e.what();
    constexpr absl::string_view kExtra = "The following argument was not expected: ";
    if (absl::StartsWith(message, kExtra)) {
      message = absl::StrCat("unexpected argument '", message.substr(kExtra.size()), "'");
    }
    return Usage(message);
  }
  return false;
}

// The usage error for a command line that stops at a group (`measurements`, `profiles`) or
// names no command at all.
absl::Status NoCommand(const CLI::App* root, const CLI::App* leaf) {
  if (leaf == root) return Usage("no command given");
  if (leaf->get_name() == "profiles") {
    return Usage("profiles needs a command: list, show NAME or delete NAME");
  }
  return Usage("measurements needs a command: import FILE.csv, list or delete ID");
}

// Every flag's occurrences into out->flags, in command-line order within each level (global
// flags first), and the positionals into out->positionals.
absl::Status CollectResults(CLI::App* root, ParsedArgs* out) {
  std::vector<CLI::App*> levels{root};
  for (CLI::App* a = root; !a->get_subcommands().empty();) {
    a = a->get_subcommands().front();
    levels.push_back(a);
  }
  for (CLI::App* level : levels) {
    std::map<const CLI::Option*, size_t> seen;
    for (const CLI::Option* o : level->parse_order()) {
      const size_t k = seen[o]++;
      if (o->get_positional()) continue;
      if (k >= o->results().size()) continue;
      const std::string name = o->get_name().substr(2);
      std::string value = o->results()[k];
      if (o->get_expected_min() == 0) {  // a flag: --x or --x=bool
        absl::StatusOr<bool> b = ParseBoolFlag("--" + name, value);
        if (!b.ok()) return b.status();
        value = *b ? "true" : "false";
      } else if (LooksLikeFlag(value)) {
        return Usage(absl::StrCat("--", name, " needs a value (", o->get_type_name(), ")"));
      }
      out->flags.emplace_back(name, value);
    }
    for (const CLI::Option* o : level->get_options()) {
      if (o->get_positional()) {
        for (const std::string& v : o->results()) out->positionals.push_back(v);
      }
    }
  }
  return absl::OkStatus();
}

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

std::string CommandSynopsis(const std::string& command) {
  const CommandDef* c = FindCommand(command);
  if (c == nullptr) return "usage: scalecast COMMAND [flags]";
  return Synopsis(*c);
}

absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args) {
  const std::vector<std::string> argv = WithHelpCommandExpanded(args);
  if (absl::Status s = CheckFlagsHaveValues(argv); !s.ok()) return s;
  AppBuilder builder;
  std::unique_ptr<CLI::App> app = builder.Build();
  absl::StatusOr<bool> help = ParseWithCli11(app.get(), argv);
  if (!help.ok()) return help.status();
  CLI::App* leaf = Innermost(app.get());
  auto it = builder.commands().find(leaf);
  ParsedArgs out;
  if (it != builder.commands().end()) out.command = it->second->name;
  if (*help) {
    out.help = true;
    out.help_text = leaf->help();
    return out;
  }
  if (it == builder.commands().end()) return NoCommand(app.get(), leaf);
  if (absl::Status s = CollectResults(app.get(), &out); !s.ok()) return s;
  return out;
}

std::string Usage() {
  AppBuilder builder;
  return builder.Build()->help();
}

std::string CommandUsage(const std::string& command) {
  AppBuilder builder;
  std::unique_ptr<CLI::App> app = builder.Build();
  for (const auto& [sub, def] : builder.commands()) {
    if (def->name == command) return sub->help();
  }
  if (command == "measurements" || command == "profiles") {
    return app->get_subcommand(command)->help();
  }
  return app->help();
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
  o.wide = args.Has("wide") && *args.Last("wide") == "true";
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
  return name == "request" || FindScenarioField(name) != nullptr;
}

}  // namespace scalecast::cli
