#include "model/recipe_presets.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "model/embedded_data.h"

namespace scalecast {
namespace {

constexpr RecipeSwitch kSwitches[] = {
    {"fused_dispatch", &RecipePreset::fused_dispatch, &Stack::fused_dispatch,
     &StackOptions::fused_dispatch},
    {"cuda_graphs", &RecipePreset::cuda_graphs, &Stack::cuda_graphs, &StackOptions::cuda_graphs},
    {"full_step_graph", &RecipePreset::full_step_graph, &Stack::full_step_graph,
     &StackOptions::full_step_graph},
    {"ep_comm_overlap", &RecipePreset::ep_comm_overlap, &Stack::ep_comm_overlap,
     &StackOptions::ep_comm_overlap},
    {"fp8_attention", &RecipePreset::fp8_attention, &Stack::fp8_attention,
     &StackOptions::fp8_attention}};

absl::Status BadSetting(absl::string_view item) {
  return absl::InvalidArgumentError(absl::StrCat("bad setting '", item, "'"));
}

absl::Status SetSwitches(absl::string_view list, RecipePreset* p) {
  if (list == "-") return absl::OkStatus();
  for (absl::string_view word : absl::StrSplit(list, ',')) {
    const RecipeSwitch* found = nullptr;
    for (const RecipeSwitch& s : kSwitches) {
      if (s.name == word) found = &s;
    }
    if (found == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown switch '", word, "'"));
    }
    p->*(found->preset) = true;
  }
  return absl::OkStatus();
}

// A settings column: "-", or key=value items separated by ','.
absl::Status SetSettings(absl::string_view list, RecipeSettings* out) {
  if (list == "-") return absl::OkStatus();
  for (absl::string_view item : absl::StrSplit(list, ',')) {
    const std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(item, absl::MaxSplits('=', 1));
    const absl::string_view key = kv.first, value = kv.second;
    int n = 0;
    std::string bad;
    if (key == "recompute") {
      Recompute r;
      if (!ParseRecompute(value, &r)) return BadSetting(item);
      out->recompute = r;
    } else if (key == "modules") {
      if (!ParseRecomputeModules(value, &out->recompute_modules, &bad) ||
          out->recompute_modules == 0) {
        return BadSetting(item);
      }
    } else if (key == "layers" || key == "mtp") {
      if (!absl::SimpleAtoi(value, &n) || n < 0 || (key == "layers" && n == 0)) {
        return BadSetting(item);
      }
      if (key == "layers") out->recompute_layers = n;
      if (key == "mtp") out->mtp_layers = n;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown setting '", item, "'"));
    }
  }
  if (out->recompute_modules != 0 && out->recompute != Recompute::kSelective) {
    return absl::InvalidArgumentError("modules= needs recompute=selective");
  }
  if (out->recompute_layers != 0 && out->recompute != Recompute::kFull) {
    return absl::InvalidArgumentError("layers= needs recompute=full");
  }
  return absl::OkStatus();
}

std::string Key(absl::string_view tag, absl::string_view model, absl::string_view family,
                absl::string_view precision) {
  return absl::StrCat(tag, " ", model, " ", family, " ", precision);
}

// The built-in table by its key, and the (tag, family, precision) it has any preset for: a
// request none of whose release, GPU and precision has one is not searched for its model (a fit
// builds a step model per run and evaluation).
struct PresetIndex {
  std::map<std::string, std::vector<const RecipePreset*>, std::less<>> by_key;
  std::set<std::string, std::less<>> any_model;
};

const PresetIndex& Index() {
  static const auto* index = [] {
    auto* ix = new PresetIndex;
    for (const RecipePreset& p : BuiltinRecipePresets()) {
      ix->by_key[Key(p.tag, p.model, p.family, p.precision)].push_back(&p);
      ix->any_model.insert(Key(p.tag, "*", p.family, p.precision));
    }
    return ix;
  }();
  return *index;
}

// The shape fields that tell the catalog's mixture-of-experts models apart.
bool SameMoeShape(const ModelSpec& a, const ModelSpec& b) {
  return a.layers == b.layers && a.hidden == b.hidden && a.heads == b.heads &&
         a.moe.num_experts == b.moe.num_experts &&
         a.moe.experts_per_token == b.moe.experts_per_token &&
         a.moe.expert_ffn_hidden == b.moe.expert_ffn_hidden;
}

}  // namespace

absl::Span<const RecipeSwitch> RecipeSwitches() { return kSwitches; }

absl::StatusOr<std::vector<RecipePreset>> ParseRecipePresets(absl::string_view text) {
  std::vector<RecipePreset> out;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    if (line.empty() || line.front() == '#') continue;
    const std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.size() != 8) {
      return absl::InvalidArgumentError(
          absl::StrCat("bridge_presets line ", number,
                       ": expected 8 words (tag model family precision gpus switches settings "
                       "name), got ",
                       words.size()));
    }
    RecipePreset p;
    p.tag = std::string(words[0]);
    p.model = std::string(words[1]);
    p.family = std::string(words[2]);
    p.precision = std::string(words[3]);
    p.name = std::string(words[7]);
    absl::Status st = absl::OkStatus();
    if (words[4] != "-" && (!absl::SimpleAtoi(words[4], &p.gpus) || p.gpus < 1)) {
      st = absl::InvalidArgumentError(absl::StrCat("bad GPU count '", words[4], "'"));
    }
    if (st.ok()) st = SetSwitches(words[5], &p);
    if (st.ok()) st = SetSettings(words[6], &p.settings);
    if (!st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("bridge_presets line ", number, ": ", st.message()));
    }
    out.push_back(std::move(p));
  }
  return out;
}

const std::vector<RecipePreset>& BuiltinRecipePresets() {
  static const auto* presets = [] {
    absl::StatusOr<std::vector<RecipePreset>> parsed =
        ParseRecipePresets(embedded::kBridgePresetsText);
    // The embedded table is checked by the tests
    // (RecipePresets.BuiltinTableParsesAndNamesCatalogParts); a malformed build reads as no presets
    // rather than a crash.
    return new std::vector<RecipePreset>(parsed.ok() ? *std::move(parsed)
                                                     : std::vector<RecipePreset>{});
  }();
  return *presets;
}

std::string RecipePrecision(Precision precision, Fp8Recipe recipe) {
  if (precision == Precision::kFp8) return absl::StrCat("fp8-", ToString(recipe));
  return std::string(ToString(precision));
}

std::string CatalogModelOf(const Catalog& catalog, const ModelSpec& model) {
  // A resolved request's model carries its catalog id; a run's row names it in words.
  if (catalog.models().count(model.name) != 0) return model.name;
  if (!model.moe.enabled()) return "";
  for (const auto& [id, preset] : catalog.models()) {
    if (preset.spec.moe.enabled() && SameMoeShape(preset.spec, model)) return id;
  }
  return "";
}

const RecipePreset* FindRecipePreset(absl::string_view tag, absl::string_view model,
                                     absl::string_view family, absl::string_view precision,
                                     int gpus) {
  const auto& by_key = Index().by_key;
  auto it = by_key.find(Key(tag, model, family, precision));
  if (it == by_key.end()) return nullptr;
  // The recipe for the nearest count by ratio (a preset for any count is as near as can be).
  const auto distance = [&](const RecipePreset* p) {
    return p->gpus == 0 ? 0.0 : std::abs(std::log(static_cast<double>(p->gpus) / gpus));
  };
  const RecipePreset* best = nullptr;
  for (const RecipePreset* p : it->second) {
    if (best == nullptr || distance(p) < distance(best) ||
        (distance(p) == distance(best) && p->gpus < best->gpus)) {
      best = p;
    }
  }
  return best;
}

const RecipePreset* ApplyRecipePreset(const Catalog& catalog, const StackOptions& stated,
                                      const ModelSpec& model, const Accelerator& accelerator,
                                      Precision precision, int gpus, absl::string_view path,
                                      Stack* stack) {
  if (stack->recipe_tag.empty() || !model.moe.enabled()) return nullptr;
  const std::string words = RecipePrecision(precision, stack->fp8_recipe);
  if (Index().any_model.count(Key(stack->recipe_tag, "*", accelerator.family, words)) == 0) {
    return nullptr;
  }
  const RecipePreset* p = FindRecipePreset(stack->recipe_tag, CatalogModelOf(catalog, model),
                                           accelerator.family, words, std::max(gpus, 1));
  if (p == nullptr) return nullptr;
  std::vector<absl::string_view> on, off;
  for (const RecipeSwitch& s : kSwitches) {
    if ((stated.*(s.stated)).has_value()) continue;
    stack->*(s.stack) = p->*(s.preset);
    (p->*(s.preset) ? on : off).push_back(s.name);
  }
  if (on.empty() && off.empty()) return p;
  const std::string note = absl::StrCat(
      path, ": as Megatron-Bridge ", p->tag, "'s preset ", p->name, " runs it",
      on.empty() ? "" : absl::StrCat(": ", absl::StrJoin(on, ", "), " on"),
      off.empty() ? "" : absl::StrCat(on.empty() ? ": " : "; ", absl::StrJoin(off, ", "), " off"),
      " (the switches the request leaves unset)");
  stack->release_note =
      stack->release_note.empty() ? note : absl::StrCat(stack->release_note, "; ", note);
  return p;
}

void ApplyRecipeSettings(const RecipePreset& preset, int stated_mtp, Parallelism* layout,
                         ModelSpec* model, std::string* note) {
  const RecipeSettings& r = preset.settings;
  std::vector<std::string> set;
  // The recompute goes with a layout: where the planner picks the axes it picks it too.
  const bool laid_out = layout->tp > 0 && layout->pp > 0 && layout->ep > 0;
  if (r.recompute.has_value() && laid_out && layout->recompute == Recompute::kUnspecified &&
      layout->recompute_modules == 0 && layout->recompute_layers == 0) {
    layout->recompute = *r.recompute;
    layout->recompute_modules = r.recompute_modules;
    layout->recompute_layers = r.recompute_layers;
    std::string what(ToString(*r.recompute));
    if (r.recompute_modules != 0) {
      absl::StrAppend(&what, " (", RecomputeModulesToString(r.recompute_modules), ")");
    }
    if (r.recompute_layers != 0) absl::StrAppend(&what, " (", r.recompute_layers, " layers)");
    set.push_back(absl::StrCat("recompute ", what));
  }
  if (r.mtp_layers.has_value() && stated_mtp == 0 && model->mtp_layers != *r.mtp_layers) {
    model->mtp_layers = *r.mtp_layers;
    set.push_back(absl::StrCat(*r.mtp_layers, " MTP modules"));
  }
  if (set.empty()) return;
  // Named once: after the switches' note, "the same recipe".
  const std::string recipe =
      absl::StrContains(*note, preset.name)
          ? std::string("the same recipe")
          : absl::StrCat("Megatron-Bridge ", preset.tag, "'s recipe ", preset.name);
  const std::string said = absl::StrCat(recipe, " sets ", absl::StrJoin(set, " and "),
                                        " (what the request leaves unset)");
  *note = note->empty() ? said : absl::StrCat(*note, "; ", said);
}

}  // namespace scalecast
