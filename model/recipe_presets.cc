#include "model/recipe_presets.h"

#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/status/status.h"
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

std::string Key(absl::string_view tag, absl::string_view model, absl::string_view family,
                absl::string_view precision) {
  return absl::StrCat(tag, " ", model, " ", family, " ", precision);
}

// The built-in table by its key, and the (tag, family, precision) it has any preset for: a
// request none of whose release, GPU and precision has one is not searched for its model (a fit
// builds a step model per run and evaluation).
struct PresetIndex {
  std::map<std::string, const RecipePreset*, std::less<>> by_key;
  std::set<std::string, std::less<>> any_model;
};

const PresetIndex& Index() {
  static const auto* index = [] {
    auto* ix = new PresetIndex;
    for (const RecipePreset& p : BuiltinRecipePresets()) {
      ix->by_key.emplace(Key(p.tag, p.model, p.family, p.precision), &p);
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
    if (words.size() != 6) {
      return absl::InvalidArgumentError(
          absl::StrCat("bridge_presets line ", number,
                       ": expected 6 words (tag model family precision "
                       "switches name), got ",
                       words.size()));
    }
    RecipePreset p{std::string(words[0]), std::string(words[1]), std::string(words[2]),
                   std::string(words[3]), std::string(words[5])};
    if (absl::Status st = SetSwitches(words[4], &p); !st.ok()) {
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
                                     absl::string_view family, absl::string_view precision) {
  const auto& by_key = Index().by_key;
  auto it = by_key.find(Key(tag, model, family, precision));
  return it == by_key.end() ? nullptr : it->second;
}

void ApplyRecipePreset(const Catalog& catalog, const StackOptions& stated, const ModelSpec& model,
                       const Accelerator& accelerator, Precision precision, absl::string_view path,
                       Stack* stack) {
  if (stack->recipe_tag.empty() || !model.moe.enabled()) return;
  const std::string words = RecipePrecision(precision, stack->fp8_recipe);
  if (Index().any_model.count(Key(stack->recipe_tag, "*", accelerator.family, words)) == 0) return;
  const RecipePreset* p = FindRecipePreset(stack->recipe_tag, CatalogModelOf(catalog, model),
                                           accelerator.family, words);
  if (p == nullptr) return;
  std::vector<absl::string_view> on, off;
  for (const RecipeSwitch& s : kSwitches) {
    if ((stated.*(s.stated)).has_value()) continue;
    stack->*(s.stack) = p->*(s.preset);
    (p->*(s.preset) ? on : off).push_back(s.name);
  }
  if (on.empty() && off.empty()) return;
  const std::string note = absl::StrCat(
      path, ": as Megatron-Bridge ", p->tag, "'s preset ", p->name, " runs it",
      on.empty() ? "" : absl::StrCat(": ", absl::StrJoin(on, ", "), " on"),
      off.empty() ? "" : absl::StrCat(on.empty() ? ": " : "; ", absl::StrJoin(off, ", "), " off"),
      " (the switches the request leaves unset)");
  stack->release_note =
      stack->release_note.empty() ? note : absl::StrCat(stack->release_note, "; ", note);
}

}  // namespace scalecast
