#include "model/catalog.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "model/embedded_data.h"
#include "model/field_rules.h"
#include "model/model_fields_gen.h"
#include "model/status_macros.h"

namespace scalecast {

double Accelerator::PeakFlops(Precision p) const {
  switch (p) {
    case Precision::kBf16:
    case Precision::kUnspecified:
      return peak_tflops_bf16 * 1e12;
    case Precision::kFp16:
      return peak_tflops_fp16 * 1e12;
    case Precision::kFp8:
      return peak_tflops_fp8 * 1e12;
    case Precision::kMxfp8:
      return peak_tflops_mxfp8 * 1e12;
    case Precision::kNvfp4:
      return peak_tflops_nvfp4 * 1e12;
    case Precision::kMxfp4:
      return peak_tflops_mxfp4 * 1e12;
  }
  return 0;
}

double Accelerator::SixteenBitPeakFlops() const {
  const double bf16 = PeakFlops(Precision::kBf16);
  return bf16 > 0 ? bf16 : PeakFlops(Precision::kFp16);
}

namespace {

using Setter = std::function<absl::Status(absl::string_view)>;

Setter Num(double* out) {
  return [out](absl::string_view v) -> absl::Status {
    if (!absl::SimpleAtod(v, out) || *out < 0) {
      return absl::InvalidArgumentError(absl::StrCat("'", v, "' is not a non-negative number"));
    }
    return absl::OkStatus();
  };
}
Setter Int(int* out) {
  return [out](absl::string_view v) -> absl::Status {
    if (!absl::SimpleAtoi(v, out) || *out < 0) {
      return absl::InvalidArgumentError(absl::StrCat("'", v, "' is not a non-negative integer"));
    }
    return absl::OkStatus();
  };
}
Setter Bool(bool* out) {
  return [out](absl::string_view v) -> absl::Status {
    if (v != "true" && v != "false") {
      return absl::InvalidArgumentError(absl::StrCat("'", v, "' is not true or false"));
    }
    *out = v == "true";
    return absl::OkStatus();
  };
}
Setter Str(std::string* out) {
  return [out](absl::string_view v) -> absl::Status {
    *out = std::string(v);
    return absl::OkStatus();
  };
}
// Names separated by '|' ("H100 80GB HBM3 | H100 SXM5 80GB"), each trimmed.
Setter Names(std::vector<std::string>* out) {
  return [out](absl::string_view v) -> absl::Status {
    out->clear();
    for (absl::string_view name : absl::StrSplit(v, '|')) {
      name = absl::StripAsciiWhitespace(name);
      if (name.empty()) return absl::InvalidArgumentError("an empty name in the list");
      out->emplace_back(name);
    }
    return absl::OkStatus();
  };
}

std::map<std::string, Setter, std::less<>> AcceleratorKeys(Accelerator* a) {
  return {{"name", Str(&a->name)},
          {"family", Str(&a->family)},
          {"like", Str(&a->like)},
          {"aliases", Names(&a->aliases)},
          {"usual_for", Names(&a->usual_for)},
          {"peak_tflops_bf16", Num(&a->peak_tflops_bf16)},
          {"peak_tflops_fp16", Num(&a->peak_tflops_fp16)},
          {"peak_tflops_fp8", Num(&a->peak_tflops_fp8)},
          {"peak_tflops_mxfp8", Num(&a->peak_tflops_mxfp8)},
          {"peak_tflops_nvfp4", Num(&a->peak_tflops_nvfp4)},
          {"peak_tflops_mxfp4", Num(&a->peak_tflops_mxfp4)},
          {"hbm_gib", Num(&a->hbm_gib)},
          {"hbm_tbps", Num(&a->hbm_tbps)},
          {"tdp_w", Num(&a->tdp_w)},
          {"power_limit_w", Num(&a->power_limit_w)},
          {"idle_w", Num(&a->idle_w)},
          {"gpus_per_node", Int(&a->gpus_per_node)},
          {"nvlink_domain", Int(&a->nvlink_domain)},
          {"nvlink_gbps", Num(&a->nvlink_gbps)},
          {"net_gbps", Num(&a->net_gbps)},
          {"host_link_gbps", Num(&a->host_link_gbps)},
          {"host_memory_gib", Num(&a->host_memory_gib)},
          {"nvlink_sharp", Bool(&a->nvlink_sharp)},
          {"power_unpublished", Bool(&a->power_unpublished)},
          {"sms", Int(&a->sms)},
          {"slice_types", Names(&a->slice_types)},
          {"tensorcores_per_chip", Int(&a->tensorcores_per_chip)},
          {"tensor_flops_per_exp", Num(&a->tensor_flops_per_exp)}};
}

// A system's keys.
std::map<std::string, Setter, std::less<>> SystemKeys(System* s) {
  return {{"name", Str(&s->name)},
          {"aliases", Names(&s->aliases)},
          {"accelerator", Str(&s->accelerator)},
          {"gpus_per_node", Int(&s->gpus_per_node)},
          {"net_gbps", Num(&s->net_gbps)}};
}

// A preset's keys: every plain field of the proto's ModelSpec by its path ("moe.num_experts",
// model/model_fields_gen.h), mlp by its name, and the preset's aliases.
std::map<std::string, Setter, std::less<>> ModelKeys(ModelPreset* preset) {
  ModelSpec* m = &preset->spec;
  std::map<std::string, Setter, std::less<>> keys;
  field_rules::VisitModelSpecFields(*m, [&keys](const char* key, auto& v) {
    using T = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<T, int>) {
      keys[key] = Int(&v);
    } else if constexpr (std::is_same_v<T, double>) {
      keys[key] = Num(&v);
    } else if constexpr (std::is_same_v<T, bool>) {
      keys[key] = Bool(&v);
    } else {
      static_assert(std::is_same_v<T, std::string>, "a ModelSpec field of a type with no key");
      keys[key] = Str(&v);
    }
  });
  keys["name"] = [](absl::string_view) { return absl::OkStatus(); };  // display only
  keys["aliases"] = Names(&preset->aliases);
  keys["mlp"] = [m](absl::string_view v) -> absl::Status {
    if (!ParseMlp(v, &m->mlp) || m->mlp == Mlp::kUnspecified) {
      return absl::InvalidArgumentError(absl::StrCat("mlp '", v, "' is not ", KnownNames<Mlp>()));
    }
    return absl::OkStatus();
  };
  return keys;
}

absl::Status CheckAccelerator(const Accelerator& a) {
  if (a.peak_tflops_bf16 <= 0 && a.peak_tflops_fp16 <= 0)
    return absl::InvalidArgumentError("no peak");
  if (a.hbm_gib <= 0 || a.hbm_tbps <= 0)
    return absl::InvalidArgumentError("hbm_gib and hbm_tbps must be > 0");
  if (a.tdp_w <= 0 || a.idle_w <= 0 || a.idle_w >= a.tdp_w) {
    return absl::InvalidArgumentError("need 0 < idle_w < tdp_w");
  }
  if (a.gpus_per_node <= 0 || a.nvlink_domain <= 0 || a.nvlink_gbps <= 0 || a.net_gbps <= 0) {
    return absl::InvalidArgumentError(
        "gpus_per_node, nvlink_domain, nvlink_gbps and net_gbps must be > 0");
  }
  if (a.family.empty()) return absl::InvalidArgumentError("family is required");
  return absl::OkStatus();
}

absl::Status CheckModel(const ModelSpec& m) {
  if (m.layers <= 0 || m.hidden <= 0 || m.heads <= 0 || m.vocab <= 0 ||
      m.mlp == Mlp::kUnspecified) {
    return absl::InvalidArgumentError("layers, hidden, heads, vocab and mlp are required");
  }
  if (m.head_dim == 0 && m.hidden % m.heads != 0) {
    return absl::InvalidArgumentError("heads must divide hidden (or set head_dim)");
  }
  if (m.kv_heads != 0 && m.heads % m.kv_heads != 0) {
    return absl::InvalidArgumentError("kv_heads must divide heads");
  }
  return CheckModelFields(m, "");
}

// --- Name lookup -------------------------------------------------------------------------------

constexpr char kSeparators[] = "-_. ";
constexpr size_t kMaxSuggestions = 5;
// The words of a Hugging Face repository's name that mark a post-trained variant of a base model
// (instruction-tuned, chat, supervised fine-tuning, preference-tuned) or the base itself
// (WithoutPostTraining).
constexpr std::array<absl::string_view, 8> kVariantWords = {"instruct", "chat", "it",  "hf",
                                                            "base",     "pt",   "sft", "dpo"};
// Queries longer than this get no edit-distance suggestions (and are shortened when echoed), so
// a huge string sent to the server costs nothing much.
constexpr size_t kMaxQueryChars = 64;
// A shorter query (compact) is never taken as the one part whose name holds it.
constexpr size_t kMinHeldQueryChars = 4;

// The words of a name: split at the separators, except a '.' between two digits, which belongs
// to a number ("opt-1.3b" is opt and 1.3b, not opt-13b's opt and 13b; "Llama 3.1" is not 31).
std::vector<absl::string_view> NameWords(absl::string_view s) {
  std::vector<absl::string_view> words;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    const bool end = i == s.size();
    if (!end && absl::string_view(kSeparators).find(s[i]) == absl::string_view::npos) continue;
    if (!end && s[i] == '.' && i > 0 && i + 1 < s.size() && absl::ascii_isdigit(s[i - 1]) &&
        absl::ascii_isdigit(s[i + 1])) {
      continue;
    }
    if (i > start) words.push_back(s.substr(start, i - start));
    start = i + 1;
  }
  return words;
}

// Lower case with the separators dropped: the form in which names are compared.
std::string Compact(absl::string_view s) {
  return absl::AsciiStrToLower(absl::StrJoin(NameWords(s), ""));
}

// The compact forms of an id's leading words, shortest first; the last is the whole id
// ("h100-sxm-80gb" -> h100, h100sxm, h100sxm80gb).
std::vector<std::string> CompactPrefixes(absl::string_view id) {
  std::vector<std::string> out;
  std::string acc;
  for (absl::string_view word : NameWords(id)) {
    absl::StrAppend(&acc, absl::AsciiStrToLower(word));
    out.push_back(acc);
  }
  return out;
}

// An entry's other names (Accelerator::aliases, ModelPreset::aliases).
const std::vector<std::string>& AliasesOf(const Accelerator& a) { return a.aliases; }
const std::vector<std::string>& AliasesOf(const ModelPreset& m) { return m.aliases; }
const std::vector<std::string>& AliasesOf(const System& s) { return s.aliases; }

// The ids a query names: the exact id if there is one; else every id equal to the query ignoring
// case and separators, or with an alias so equal; else every id whose leading words spell the
// query (an alias). One id = found; several = ambiguous; none = unknown.
template <typename T>
std::vector<std::string> Resolve(const std::map<std::string, T, std::less<>>& entries,
                                 absl::string_view query) {
  if (entries.find(query) != entries.end()) return {std::string(query)};
  const std::string q = Compact(query);
  if (q.empty()) return {};
  std::vector<std::string> whole, leading;
  for (const auto& [id, entry] : entries) {
    const std::vector<std::string> prefixes = CompactPrefixes(id);
    if (prefixes.empty()) continue;
    const std::vector<std::string>& aliases = AliasesOf(entry);
    if (prefixes.back() == q ||
        std::any_of(aliases.begin(), aliases.end(),
                    [&q](const std::string& a) { return Compact(a) == q; })) {
      whole.push_back(id);
    } else if (std::find(prefixes.begin(), prefixes.end() - 1, q) != prefixes.end() - 1) {
      leading.push_back(id);
    }
  }
  return whole.empty() ? leading : whole;
}

// A query for an accelerator without the vendor words it may lead with, as nvidia-smi and
// rocm-smi print names ("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-32GB", "AMD Instinct MI300X")
// and vendors name their parts ("Intel Gaudi 3", "AWS Trainium2").
absl::string_view WithoutVendor(absl::string_view query) {
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(query);
  while (true) {
    const size_t end = rest.find_first_of(kSeparators);
    const absl::string_view word = rest.substr(0, end);
    bool vendor = false;
    for (absl::string_view v : {"nvidia", "tesla", "amd", "instinct", "intel", "habana", "aws"}) {
      vendor = vendor || absl::EqualsIgnoreCase(word, v);
    }
    if (!vendor || end == absl::string_view::npos) return rest;
    rest = absl::StripLeadingAsciiWhitespace(rest.substr(end + 1));
  }
}

// A query for a model without the Hugging Face organisation it may lead with
// ("meta-llama/Llama-2-70b-hf" -> "Llama-2-70b-hf").
absl::string_view WithoutOrganisation(absl::string_view query) {
  const size_t slash = query.rfind('/');
  return slash == absl::string_view::npos ? query : query.substr(slash + 1);
}

// A post-trained variant's repository name as its base model's: without the words Hugging Face
// repositories add for the variants trained from a base, trailing or not
// ("Llama-3.1-70B-Instruct", "Llama-2-70b-chat-hf", "gemma-2-9b-it", "Mistral-7B-Instruct-v0.3",
// "internlm2-chat-20b", "OLMo-2-1124-7B-SFT"), which keep the base's shape (their config.json
// differs in no shape field), so train at its speed; and without the words that name the base
// itself ("-base", Gemma 3's "-pt").
std::string WithoutPostTraining(absl::string_view name) {
  std::vector<absl::string_view> kept;
  for (absl::string_view word : absl::StrSplit(name, absl::ByAnyChar("-_"))) {
    const bool variant =
        std::any_of(kVariantWords.begin(), kVariantWords.end(),
                    [word](absl::string_view v) { return absl::EqualsIgnoreCase(word, v); });
    if (kept.empty() || !variant) kept.push_back(word);
  }
  return absl::StrJoin(kept, "-");
}

template <typename T>
const T* FindEntry(const std::map<std::string, T, std::less<>>& entries, absl::string_view query) {
  if (auto it = entries.find(query); it != entries.end()) return &it->second;
  const std::vector<std::string> ids = Resolve(entries, query);
  return ids.size() == 1 ? &entries.find(ids.front())->second : nullptr;
}

// FindEntry for hardware (a part or a system): as named, else without the vendor words it leads
// with ("NVIDIA H100 80GB HBM3", "NVIDIA DGX H100", "AWS p5.48xlarge").
template <typename T>
const T* FindHardware(const std::map<std::string, T, std::less<>>& entries,
                      absl::string_view query) {
  if (const T* e = FindEntry(entries, query)) return e;
  return FindEntry(entries, WithoutVendor(query));
}

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// adjacent characters each cost 1.
int EditDistance(absl::string_view a, absl::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

// Whether every word of a query (`words`, compact) is in the id's compact form or in one of its
// aliases': "H100 80GB" is in h100-sxm-80gb and h100-pcie-80gb, not in h100-sxm-96gb-500w.
bool HasEveryWord(const std::vector<std::string>& words, absl::string_view compact_id,
                  const std::vector<std::string>& aliases) {
  auto has_all = [&words](absl::string_view name) {
    return std::all_of(words.begin(), words.end(), [name](const std::string& w) {
      return name.find(w) != absl::string_view::npos;
    });
  };
  return has_all(compact_id) ||
         std::any_of(aliases.begin(), aliases.end(),
                     [&has_all](const std::string& a) { return has_all(Compact(a)); });
}

// The compact words of a query when it has several and is short enough to look at, else none.
std::vector<std::string> QueryWords(absl::string_view query) {
  std::vector<std::string> words;
  if (query.size() > kMaxQueryChars) return words;
  for (absl::string_view w : NameWords(query)) words.push_back(Compact(w));
  if (words.size() < 2) words.clear();
  return words;
}

// Whether an entry's name holds the query (compact `q`, its `words`): its whole compact id
// contains the query, or its id or an alias contains every word of it.
template <typename T>
bool HoldsQuery(absl::string_view q, const std::vector<std::string>& words,
                absl::string_view compact_id, const T& entry) {
  return compact_id.find(q) != absl::string_view::npos ||
         (!words.empty() && HasEveryWord(words, compact_id, AliasesOf(entry)));
}

// The ids whose names hold the query ("MI300" -> mi300x-192gb; "V100 SXM2" -> both SXM2 parts).
template <typename T>
std::vector<std::string> Holding(const std::map<std::string, T, std::less<>>& entries,
                                 absl::string_view query) {
  const std::string q = Compact(query);
  if (q.empty()) return {};
  const std::vector<std::string> words = QueryWords(query);
  std::vector<std::string> out;
  for (const auto& [id, entry] : entries) {
    const std::vector<std::string> prefixes = CompactPrefixes(id);
    if (!prefixes.empty() && HoldsQuery(q, words, prefixes.back(), entry)) out.push_back(id);
  }
  return out;
}

// Up to kMaxSuggestions ids close to the query: ids containing it, or each of its words, first,
// then ids within a few edits of their whole compact form or of one of their leading-word
// prefixes ("h2000" is one edit from "h200"), nearest first, ties by id.
template <typename T>
std::vector<std::string> Suggest(const std::map<std::string, T, std::less<>>& entries,
                                 absl::string_view query) {
  const std::string q = Compact(query);
  if (q.empty()) return {};
  const int max_edits = std::max(1, static_cast<int>(q.size() / 4));
  const std::vector<std::string> words = QueryWords(query);
  std::vector<std::pair<int, std::string>> scored;
  for (const auto& [id, entry] : entries) {
    const std::vector<std::string> prefixes = CompactPrefixes(id);
    if (prefixes.empty()) continue;
    int score = std::numeric_limits<int>::max();
    if (HoldsQuery(q, words, prefixes.back(), entry)) {
      score = 0;
    } else if (q.size() <= kMaxQueryChars) {
      for (const std::string& p : prefixes) score = std::min(score, EditDistance(q, p));
      if (score > max_edits) continue;
    } else {
      continue;
    }
    scored.emplace_back(score, id);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (const auto& [score, id] : scored) {
    if (out.size() == kMaxSuggestions) break;
    out.push_back(id);
  }
  return out;
}

// `match` is the query as looked up (an accelerator's without its vendor words), `query` as
// written.
template <typename T>
std::string NotFoundMessage(const std::map<std::string, T, std::less<>>& entries,
                            absl::string_view kind, absl::string_view list_command,
                            absl::string_view query, absl::string_view match) {
  const std::string shown = query.size() <= kMaxQueryChars
                                ? std::string(query)
                                : absl::StrCat(query.substr(0, kMaxQueryChars), "...");
  const std::string list_all = absl::StrCat("(run 'scalecast ", list_command, "' to list all)");
  const std::vector<std::string> matches = Resolve(entries, match);
  if (matches.size() > 1) {
    return absl::StrCat("ambiguous ", kind, " '", shown, "'; it matches ", matches.size(),
                        ", choose one of: ", absl::StrJoin(matches, ", "), " ", list_all);
  }
  if (matches.size() == 1) {  // not an error; a caller asked anyway
    return absl::StrCat(kind, " '", shown, "' is ", matches.front());
  }
  const std::vector<std::string> close = Suggest(entries, match);
  if (close.empty()) return absl::StrCat("unknown ", kind, " '", shown, "' ", list_all);
  return absl::StrCat("unknown ", kind, " '", shown,
                      "'; did you mean: ", absl::StrJoin(close, ", "), "? ", list_all);
}

}  // namespace

// --- Model field checks ------------------------------------------------------------------------

namespace {

constexpr absl::string_view kPatternChars = "M*-E";

// Collects the first error, with the field's full path.
class FieldChecker {
 public:
  // Fields are named under `path` + `sub` ("scenario" + ".workload.model"), joined only for an
  // error.
  FieldChecker(absl::string_view path, absl::string_view sub = "") : path_(path), sub_(sub) {}

  bool ok() const { return status_.ok(); }
  absl::Status status() const { return status_; }

  void Fail(absl::string_view field, absl::string_view why) {
    if (!status_.ok()) return;
    const bool top = path_.empty() && sub_.empty();
    status_ =
        absl::InvalidArgumentError(absl::StrCat(path_, sub_, top ? "" : ".", field, ": ", why));
  }
  void Range(absl::string_view field, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi) Fail(field, absl::StrCat(v, " is out of range [", lo, ", ", hi, "]"));
  }
  // Every field's proto range (model/field_rules.h).
  void Ranges(const ModelSpec& m) {
    if (!status_.ok()) return;
    status_ = CheckFieldRanges([&](auto&& f) { field_rules::VisitModelSpec(m, f); }, path_, sub_);
  }
  // A field the model needs beside another (experts, latent attention, Mamba layers): at least
  // 1, within its proto range.
  void Required(const FieldRule& rule, int64_t v) {
    Range(rule.name, v, 1, static_cast<int64_t>(rule.max));
  }
  // A field that means something only beside another: 0 unless `allowed`.
  void ZeroUnless(absl::string_view field, int64_t v, bool allowed, absl::string_view needs) {
    if (v != 0 && !allowed) Fail(field, absl::StrCat(v, " is set but ", needs));
  }

 private:
  absl::string_view path_;
  absl::string_view sub_;
  absl::Status status_;
};

void CheckMoe(const ModelSpec& m, FieldChecker* c) {
  const MoeSpec& e = m.moe;
  if (!e.enabled()) {
    const absl::string_view needs = "moe.num_experts is 0 (a dense model)";
    c->ZeroUnless("moe.experts_per_token", e.experts_per_token, false, needs);
    c->ZeroUnless("moe.expert_ffn_hidden", e.expert_ffn_hidden, false, needs);
    c->ZeroUnless("moe.shared_experts", e.shared_experts, false, needs);
    c->ZeroUnless("moe.shared_ffn_hidden", e.shared_ffn_hidden, false, needs);
    c->ZeroUnless("moe.dense_layers", e.dense_layers, false, needs);
    if (e.capacity_factor != 0) {  // NaN too
      c->Fail("moe.capacity_factor",
              absl::StrCat(e.capacity_factor, " is set but moe.num_experts is 0 (a dense model)"));
    }
    if (e.expert_bias) c->Fail("moe.expert_bias", absl::StrCat("is set but ", needs));
    c->ZeroUnless("moe.latent_size", e.latent_size, false, needs);
    c->ZeroUnless("moe.router_groups", e.router_groups, false, needs);
    c->ZeroUnless("moe.router_group_topk", e.router_group_topk, false, needs);
    return;
  }
  if (e.experts_per_token < 1) {
    c->Fail("moe.experts_per_token", absl::StrCat(e.experts_per_token, " is less than 1"));
  } else if (e.experts_per_token > e.num_experts) {
    c->Fail("moe.experts_per_token",
            absl::StrCat(e.experts_per_token, " is more than num_experts ", e.num_experts));
  }
  c->Required(field_rules::kModelSpecMoeExpertFfnHidden, e.expert_ffn_hidden);
  c->ZeroUnless("moe.shared_ffn_hidden", e.shared_ffn_hidden, e.shared_experts > 0,
                "moe.shared_experts is 0");
  if (e.dense_layers < 0 || e.dense_layers >= m.layers) {
    c->Fail("moe.dense_layers", absl::StrCat(e.dense_layers, " is out of range [0, layers ",
                                             m.layers, "): at least one layer must be MoE"));
  }
  if (!(e.capacity_factor == 0 ||
        (e.capacity_factor >= 1 && e.capacity_factor <= kMaxCapacityFactor))) {
    c->Fail("moe.capacity_factor",
            absl::StrCat(e.capacity_factor, " is neither 0 (dropless) nor in [1, ",
                         kMaxCapacityFactor, "]"));
  }
  // Groups partition the experts; a token's experts come from router_group_topk of them.
  c->Range("moe.router_groups", e.router_groups, 0, e.num_experts);
  if (!c->ok()) return;
  if (e.router_groups > 0 && e.num_experts % e.router_groups != 0) {
    c->Fail("moe.router_groups",
            absl::StrCat(e.router_groups, " does not divide num_experts ", e.num_experts));
    return;
  }
  if (e.router_groups == 0) {
    c->ZeroUnless("moe.router_group_topk", e.router_group_topk, false, "moe.router_groups is 0");
    return;
  }
  c->Range("moe.router_group_topk", e.router_group_topk, 1, e.router_groups);
  if (c->ok() && static_cast<int64_t>(e.router_group_topk) * (e.num_experts / e.router_groups) <
                     e.experts_per_token) {
    c->Fail("moe.router_group_topk",
            absl::StrCat(e.router_group_topk, " groups of ", e.num_experts / e.router_groups,
                         " experts hold fewer than experts_per_token ", e.experts_per_token));
  }
}

void CheckMla(const MlaSpec& a, FieldChecker* c) {
  if (!a.enabled()) {
    const absl::string_view needs = "mla.kv_lora_rank is 0 (no latent attention)";
    c->ZeroUnless("mla.q_lora_rank", a.q_lora_rank, false, needs);
    c->ZeroUnless("mla.qk_nope_head_dim", a.qk_nope_head_dim, false, needs);
    c->ZeroUnless("mla.qk_rope_head_dim", a.qk_rope_head_dim, false, needs);
    c->ZeroUnless("mla.v_head_dim", a.v_head_dim, false, needs);
    return;
  }
  c->Required(field_rules::kModelSpecMlaVHeadDim, a.v_head_dim);
  if (c->ok() && a.qk_nope_head_dim + a.qk_rope_head_dim == 0) {
    c->Fail("mla.qk_nope_head_dim", "qk_nope_head_dim + qk_rope_head_dim must be > 0");
  }
}

void CheckLocalAttention(const ModelSpec& m, FieldChecker* c) {
  c->Range("full_attention_every", m.full_attention_every, 0, m.layers);
  c->ZeroUnless("full_attention_every", m.full_attention_every, m.attention_window > 0,
                "attention_window is 0 (every layer full)");
}

void CheckPattern(const ModelSpec& m, FieldChecker* c) {
  const std::string& p = m.layer_pattern;
  bool mamba = false, expert = false;
  if (!p.empty()) {
    if (p.size() > static_cast<size_t>(kMaxLayers) || p.size() != static_cast<size_t>(m.layers)) {
      c->Fail("layer_pattern",
              absl::StrCat(p.size(), " characters, but layers is ", m.layers, " (one per layer)"));
      return;
    }
    for (size_t i = 0; i < p.size(); ++i) {
      if (kPatternChars.find(p[i]) == absl::string_view::npos) {
        const auto ch = static_cast<unsigned char>(p[i]);
        c->Fail("layer_pattern",
                absl::StrCat("character ", i + 1, " is ",
                             absl::ascii_isprint(ch) ? absl::StrCat("'", std::string(1, p[i]), "'")
                                                     : absl::StrCat("byte ", int{ch}),
                             "; use 'M' (Mamba-2), '*' (attention), '-' (dense MLP), 'E' (MoE)"));
        return;
      }
      mamba |= p[i] == 'M';
      expert |= p[i] == 'E';
    }
    if (expert && !m.moe.enabled()) {
      c->Fail("layer_pattern", "has 'E' (MoE) layers but moe.num_experts is 0");
    } else if (!expert && m.moe.enabled()) {
      c->Fail("moe.num_experts",
              absl::StrCat(m.moe.num_experts, " is set but layer_pattern has no 'E' (MoE) layer"));
    }
    c->ZeroUnless("moe.dense_layers", m.moe.dense_layers, false,
                  "layer_pattern marks the dense layers ('-')");
  }
  const absl::string_view needs = "layer_pattern has no 'M' (Mamba-2) layer";
  if (!mamba) {
    c->ZeroUnless("mamba_heads", m.mamba_heads, false, needs);
    c->ZeroUnless("mamba_head_dim", m.mamba_head_dim, false, needs);
    c->ZeroUnless("mamba_state", m.mamba_state, false, needs);
    c->ZeroUnless("mamba_groups", m.mamba_groups, false, needs);
    return;
  }
  c->Required(field_rules::kModelSpecMambaHeads, m.mamba_heads);
  c->Required(field_rules::kModelSpecMambaHeadDim, m.mamba_head_dim);
  c->Required(field_rules::kModelSpecMambaState, m.mamba_state);
  c->Required(field_rules::kModelSpecMambaGroups, m.mamba_groups);
  if (c->ok() && m.mamba_heads % m.mamba_groups != 0) {
    c->Fail("mamba_groups",
            absl::StrCat(m.mamba_groups, " does not divide mamba_heads ", m.mamba_heads));
  }
}

}  // namespace

namespace {

// Sets *to = from where `from` is set (non-zero, non-empty, true).
template <typename T>
void Override(const T& from, T* to) {
  if (from != T{}) *to = from;
}

}  // namespace

ModelSpec OverlayShape(const ModelSpec& base, const ModelSpec& r) {
  ModelSpec m = base;
  // Every plain field (model/model_fields_gen.h) and the MLP.
  field_rules::VisitModelSpecFieldPairs(
      r, m, [](const char*, const auto& from, auto& to) { Override(from, &to); });
  Override(r.mlp, &m.mlp);
  return m;
}

bool HasDenseFfn(const ModelSpec& m) {
  if (!m.layer_pattern.empty()) return m.layer_pattern.find('-') != std::string::npos;
  return !m.moe.enabled() || m.moe.dense_layers > 0;
}

bool HasShape(const ModelSpec& m) { return field_rules::SetsShapeField(m); }

bool NameOnly(const ModelSpec& m) {
  int set = m.mlp != Mlp::kUnspecified;
  field_rules::VisitModelSpecFields(m, [&](const char*, const auto& v) {
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<V, std::string>) {
      set += !v.empty();
    } else {
      set += v != V{};
    }
  });
  return set == !m.name.empty();  // the name is one of the fields visited
}

absl::Status CheckModelFields(const ModelSpec& m, absl::string_view path) {
  return CheckModelFields(m, path, "");
}

absl::Status CheckModelFields(const ModelSpec& m, absl::string_view path, absl::string_view sub) {
  FieldChecker c(path, sub);
  c.Ranges(m);  // each field's proto range; then what relates fields
  CheckMoe(m, &c);
  CheckMla(m.mla, &c);
  CheckLocalAttention(m, &c);
  CheckPattern(m, &c);
  if (c.ok() && m.ffn_hidden == 0 && HasDenseFfn(m)) {
    c.Fail("ffn_hidden", "is required (> 0): some layers have a dense feed-forward block");
  }
  return c.status();
}

absl::StatusOr<Catalog> Catalog::Parse(absl::string_view text) {
  Catalog c;
  RETURN_IF_ERROR(c.MergeText(text));
  return c;
}

namespace {

// One catalog text, block by block ("accelerator <id>", "model <id>" or "system <id>",
// "key = value" lines, "end"), into copies of the catalog's maps, which the caller commits once
// the whole text is read.
class CatalogText {
 public:
  CatalogText(std::map<std::string, Accelerator, std::less<>> accelerators,
              std::map<std::string, ModelPreset, std::less<>> models,
              std::map<std::string, System, std::less<>> systems)
      : accelerators_(std::move(accelerators)),
        models_(std::move(models)),
        systems_(std::move(systems)) {}
  CatalogText(const CatalogText&) = delete;  // keys_ point into this object
  CatalogText& operator=(const CatalogText&) = delete;

  // One line without its comment and surrounding blanks (never empty).
  absl::Status Line(int line_no, absl::string_view line) {
    if (block_ == Block::kNone) return Open(line_no, line);
    if (line == "end") return Close();
    return Set(line_no, line);
  }

  absl::Status Finish() const {
    if (block_ != Block::kNone) return Fail(block_line_, "block has no 'end'");
    return absl::OkStatus();
  }

  std::map<std::string, Accelerator, std::less<>>& accelerators() { return accelerators_; }
  std::map<std::string, ModelPreset, std::less<>>& models() { return models_; }
  std::map<std::string, System, std::less<>>& systems() { return systems_; }

 private:
  enum class Block { kNone, kAccelerator, kModel, kSystem };

  static absl::Status Fail(int line, absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("catalog line ", line, ": ", what));
  }

  absl::Status Open(int line_no, absl::string_view line) {
    std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.size() != 2 ||
        (words[0] != "accelerator" && words[0] != "model" && words[0] != "system")) {
      return Fail(line_no, "expected 'accelerator <id>', 'model <id>' or 'system <id>'");
    }
    block_line_ = line_no;
    if (words[0] == "system") {
      block_ = Block::kSystem;
      system_ = System();
      system_.id = std::string(words[1]);
      keys_ = SystemKeys(&system_);
    } else if (words[0] == "accelerator") {
      block_ = Block::kAccelerator;
      acc_ = Accelerator();
      acc_.id = std::string(words[1]);
      keys_ = AcceleratorKeys(&acc_);
    } else {
      block_ = Block::kModel;
      preset_ = ModelPreset();
      preset_.spec.name = std::string(words[1]);
      keys_ = ModelKeys(&preset_);
    }
    return absl::OkStatus();
  }

  absl::Status Close() {
    if (block_ == Block::kSystem) {
      if (absl::Status s = CheckSystem(system_); !s.ok()) {
        return Fail(block_line_, absl::StrCat("system ", system_.id, ": ", s.message()));
      }
      systems_[system_.id] = system_;
    } else if (block_ == Block::kAccelerator) {
      if (acc_.power_limit_w == 0) acc_.power_limit_w = acc_.tdp_w;
      if (absl::Status s = BorrowEfficiencies(&acc_); !s.ok()) {
        return Fail(block_line_, absl::StrCat("accelerator ", acc_.id, ": ", s.message()));
      }
      if (absl::Status s = CheckAccelerator(acc_); !s.ok()) {
        return Fail(block_line_, absl::StrCat("accelerator ", acc_.id, ": ", s.message()));
      }
      accelerators_[acc_.id] = acc_;
    } else {
      ModelSpec& spec = preset_.spec;
      if (spec.kv_heads == 0) spec.kv_heads = spec.heads;
      if (absl::Status s = CheckModel(spec); !s.ok()) {
        return Fail(block_line_, absl::StrCat("model ", spec.name, ": ", s.message()));
      }
      preset_.id = spec.name;
      models_[spec.name] = preset_;
    }
    block_ = Block::kNone;
    return absl::OkStatus();
  }

  // A part no run was measured on that names the part whose fitted efficiencies it takes
  // (`like`, of this text or the catalog it merges into): it takes that part's family and is
  // marked borrowed, which widens its band and says so (model/uncertainty.cc).
  absl::Status BorrowEfficiencies(Accelerator* a) const {
    if (a->like.empty()) return absl::OkStatus();
    auto base = accelerators_.find(a->like);
    if (base == accelerators_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("like: '", a->like, "' is no part of the catalog"));
    }
    if (!base->second.like.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("like: '", a->like,
                                                     "' takes another part's efficiencies ('",
                                                     base->second.like, "'); name that part"));
    }
    if (!a->family.empty() && a->family != base->second.family) {
      return absl::InvalidArgumentError(absl::StrCat("family '", a->family, "' differs from '",
                                                     a->like, "''s ('", base->second.family,
                                                     "'); give one or the other"));
    }
    a->family = base->second.family;
    a->borrowed = true;
    a->like_basis =
        absl::StrCat("efficiencies of ", a->like, " (no run on this part's silicon was fitted)");
    return absl::OkStatus();
  }

  // A system names a part of the catalog (this text's or the one it merges into) and its node.
  absl::Status CheckSystem(const System& s) const {
    if (accelerators_.find(s.accelerator) == accelerators_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("accelerator '", s.accelerator, "' is no part of the catalog"));
    }
    if (s.gpus_per_node < 1 || s.gpus_per_node > field_rules::kClusterGpusPerNode.max) {
      return absl::InvalidArgumentError(absl::StrCat("gpus_per_node ", s.gpus_per_node,
                                                     " is out of range [1, ",
                                                     field_rules::kClusterGpusPerNode.max, "]"));
    }
    if (!(s.net_gbps >= 0.1 && s.net_gbps <= kMaxSpecLinkGbps)) {
      return absl::InvalidArgumentError(
          absl::StrCat("net_gbps ", s.net_gbps, " is out of range [0.1, ", kMaxSpecLinkGbps, "]"));
    }
    return absl::OkStatus();
  }

  absl::Status Set(int line_no, absl::string_view line) {
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) return Fail(line_no, "expected 'key = value' or 'end'");
    absl::string_view key = absl::StripAsciiWhitespace(line.substr(0, eq));
    absl::string_view value = absl::StripAsciiWhitespace(line.substr(eq + 1));
    auto it = keys_.find(key);
    if (it == keys_.end()) return Fail(line_no, absl::StrCat("unknown key '", key, "'"));
    if (absl::Status s = it->second(value); !s.ok()) {
      return Fail(line_no, absl::StrCat(key, ": ", s.message()));
    }
    return absl::OkStatus();
  }

  std::map<std::string, Accelerator, std::less<>> accelerators_;
  std::map<std::string, ModelPreset, std::less<>> models_;
  std::map<std::string, System, std::less<>> systems_;
  Block block_ = Block::kNone;
  int block_line_ = 0;
  Accelerator acc_;
  ModelPreset preset_;
  System system_;
  std::map<std::string, Setter, std::less<>> keys_;  // the open block's, setting its entry
};

}  // namespace

absl::Status Catalog::MergeText(absl::string_view text) {
  CatalogText parsed(accelerators_, models_, systems_);
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    absl::string_view line = raw;
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    RETURN_IF_ERROR(parsed.Line(line_no, line));
  }
  RETURN_IF_ERROR(parsed.Finish());
  accelerators_ = std::move(parsed.accelerators());
  models_ = std::move(parsed.models());
  systems_ = std::move(parsed.systems());
  return absl::OkStatus();
}

void Catalog::AddAccelerator(Accelerator a) {
  std::string id = a.id;
  accelerators_[std::move(id)] = std::move(a);
}

bool AcceleratorSpec::empty() const { return id.empty() && like.empty() && !has_hardware(); }

bool AcceleratorSpec::has_hardware() const {
  return peak_tflops_bf16 != 0 || peak_tflops_fp8 != 0 || peak_tflops_fp4 != 0 || hbm_gb != 0 ||
         hbm_tb_s != 0 || nvlink_domain != 0 || nvlink_gb_s != 0 || inter_node_gbps_per_gpu != 0 ||
         tdp_watts != 0 || idle_watts != 0 || tensor_flops_per_exp != 0;
}

namespace {

absl::Status SpecField(absl::string_view path, absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(path, ".", field, ": ", why));
}

// 0 = unset; otherwise within (0, hi]. NaN, infinities and negatives are errors.
absl::Status SpecRange(absl::string_view path, absl::string_view field, double v, double hi) {
  if (v == 0) return absl::OkStatus();
  if (!(v > 0) || !(v <= hi)) {
    return SpecField(path, field, absl::StrCat(v, " is out of range (0, ", hi, "]"));
  }
  return absl::OkStatus();
}

// An id a user gives: letters, digits and '-', '_', '.', starting with a letter or digit.
absl::Status CheckSpecId(absl::string_view path, absl::string_view field, absl::string_view id) {
  if (id.size() > kMaxSpecIdBytes) {
    return SpecField(path, field, absl::StrCat("longer than ", kMaxSpecIdBytes, " bytes"));
  }
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    const bool ok = absl::ascii_isalnum(c) || (i > 0 && (c == '-' || c == '_' || c == '.'));
    if (!ok) {
      return SpecField(path, field,
                       absl::StrCat("'", id.substr(0, 64),
                                    "' may hold letters, digits, '-', '_' and '.' only, "
                                    "starting with a letter or digit"));
    }
  }
  return absl::OkStatus();
}

// `v` in place of `base_field`, and `paired` (a format at a fixed ratio to it) scaled alike.
void Override(double v, double* field, double* paired) {
  if (v == 0) return;
  if (paired != nullptr && *paired > 0 && *field > 0) *paired = v * (*paired / *field);
  *field = v;
}

}  // namespace

absl::StatusOr<const Accelerator*> SpecBase(const Catalog& catalog, absl::string_view named,
                                            const AcceleratorSpec& spec, absl::string_view path,
                                            std::string* basis) {
  if (!spec.like.empty()) {
    const Accelerator* a = catalog.FindAccelerator(spec.like);
    if (a == nullptr) {
      return absl::NotFoundError(
          absl::StrCat(path, ".like: ", catalog.AcceleratorNotFound(spec.like)));
    }
    return a;
  }
  if (!named.empty()) {
    if (const Accelerator* a = catalog.FindAccelerator(named)) return a;
  }
  if (spec.peak_tflops_bf16 <= 0) {
    return SpecField(path, "peak_tflops_bf16",
                     absl::StrCat("is required to describe a new part",
                                  named.empty() ? "" : absl::StrCat(" ('", named, "')"),
                                  ", or set like to the catalog part it resembles"));
  }
  RETURN_IF_ERROR(SpecRange(path, "peak_tflops_bf16", spec.peak_tflops_bf16, kMaxSpecTflops));
  RETURN_IF_ERROR(SpecRange(path, "hbm_tb_s", spec.hbm_tb_s, kMaxSpecHbmTbS));
  // The nearest generation: the catalog part closest in log bf16 peak and, when given, log HBM
  // bandwidth (the two rates the fitted GEMM and memory efficiencies scale).
  const Accelerator* best = nullptr;
  double best_d = 0;
  for (const auto& [id, a] : catalog.accelerators()) {
    if (a.origin != "catalog" || a.PeakFlops(Precision::kBf16) <= 0) continue;
    double d = std::fabs(std::log(spec.peak_tflops_bf16 / a.peak_tflops_bf16));
    if (spec.hbm_tb_s > 0) d += std::fabs(std::log(spec.hbm_tb_s / a.hbm_tbps));
    if (best == nullptr || d < best_d) {
      best = &a;
      best_d = d;
    }
  }
  if (best == nullptr) return SpecField(path, "like", "no catalog part to borrow from");
  *basis = absl::StrCat("efficiencies of ", best->id, ", the nearest generation by bf16 peak",
                        spec.hbm_tb_s > 0 ? " and HBM bandwidth" : "");
  return best;
}

absl::StatusOr<Accelerator> DescribeAccelerator(const Accelerator& base,
                                                const AcceleratorSpec& spec,
                                                absl::string_view path) {
  RETURN_IF_ERROR(CheckSpecId(path, "id", spec.id));
  RETURN_IF_ERROR(SpecRange(path, "peak_tflops_bf16", spec.peak_tflops_bf16, kMaxSpecTflops));
  RETURN_IF_ERROR(SpecRange(path, "peak_tflops_fp8", spec.peak_tflops_fp8, kMaxSpecTflops));
  RETURN_IF_ERROR(SpecRange(path, "peak_tflops_fp4", spec.peak_tflops_fp4, kMaxSpecTflops));
  RETURN_IF_ERROR(SpecRange(path, "hbm_gb", spec.hbm_gb, kMaxSpecHbmGb));
  RETURN_IF_ERROR(SpecRange(path, "hbm_tb_s", spec.hbm_tb_s, kMaxSpecHbmTbS));
  if (spec.nvlink_domain < 0 || spec.nvlink_domain > kMaxSpecNvlinkDomain) {
    return SpecField(
        path, "nvlink_domain",
        absl::StrCat(spec.nvlink_domain, " is out of range [1, ", kMaxSpecNvlinkDomain, "]"));
  }
  RETURN_IF_ERROR(SpecRange(path, "nvlink_gb_s", spec.nvlink_gb_s, kMaxSpecLinkGbps));
  RETURN_IF_ERROR(
      SpecRange(path, "inter_node_gbps_per_gpu", spec.inter_node_gbps_per_gpu, kMaxSpecLinkGbps));
  RETURN_IF_ERROR(SpecRange(path, "tdp_watts", spec.tdp_watts, kMaxSpecWatts));
  RETURN_IF_ERROR(SpecRange(path, "idle_watts", spec.idle_watts, kMaxSpecWatts));
  RETURN_IF_ERROR(SpecRange(path, "tensor_flops_per_exp", spec.tensor_flops_per_exp,
                            kMaxSpecTensorFlopsPerExp));

  Accelerator a = base;
  a.aliases.clear();  // the base part's other names are not this part's
  a.spec = spec;
  a.origin = "request";
  a.like = base.like.empty() ? base.id : base.like;
  if (!spec.id.empty()) {
    a.id = spec.id;
    a.name = absl::StrCat(spec.id, " (described, like ", a.like, ")");
  }
  Override(spec.peak_tflops_bf16, &a.peak_tflops_bf16, &a.peak_tflops_fp16);
  if (spec.peak_tflops_bf16 > 0 && a.peak_tflops_fp16 <= 0) {
    a.peak_tflops_fp16 = spec.peak_tflops_bf16;
  }
  Override(spec.peak_tflops_fp8, &a.peak_tflops_fp8, &a.peak_tflops_mxfp8);
  // fp4: the format the base runs; a base without fp4 takes its vendor's (AMD's CDNA parts
  // run OCP MXFP4, NVIDIA's NVFP4).
  const bool amd = absl::StartsWith(base.family, "mi");
  if (a.peak_tflops_mxfp4 > 0 || (a.peak_tflops_nvfp4 <= 0 && amd)) {
    Override(spec.peak_tflops_fp4, &a.peak_tflops_mxfp4, nullptr);
  } else {
    Override(spec.peak_tflops_fp4, &a.peak_tflops_nvfp4, nullptr);
  }
  if (spec.hbm_gb > 0) a.hbm_gib = spec.hbm_gb;
  if (spec.hbm_tb_s > 0) a.hbm_tbps = spec.hbm_tb_s;
  if (spec.nvlink_domain > 0) a.nvlink_domain = spec.nvlink_domain;
  if (spec.nvlink_gb_s > 0) a.nvlink_gbps = spec.nvlink_gb_s;
  if (spec.inter_node_gbps_per_gpu > 0) a.net_gbps = spec.inter_node_gbps_per_gpu;
  if (spec.tdp_watts > 0) a.tdp_w = a.power_limit_w = spec.tdp_watts;
  if (spec.idle_watts > 0) a.idle_w = spec.idle_watts;
  // Both watts given: the caller's figures, no longer the catalog's placeholders.
  if (spec.tdp_watts > 0 && spec.idle_watts > 0) a.power_unpublished = false;
  if (spec.tensor_flops_per_exp > 0) a.tensor_flops_per_exp = spec.tensor_flops_per_exp;
  if (a.idle_w >= a.tdp_w) {
    return SpecField(path, spec.idle_watts > 0 ? "idle_watts" : "tdp_watts",
                     absl::StrCat("idle ", a.idle_w, " W is not below TDP ", a.tdp_w, " W"));
  }
  // Fitted efficiencies are the base silicon's: other compute peaks, HBM bandwidth or tensor FLOPs
  // per exponential borrow them.
  const bool other_silicon =
      a.peak_tflops_bf16 != base.peak_tflops_bf16 || a.peak_tflops_fp8 != base.peak_tflops_fp8 ||
      a.peak_tflops_nvfp4 != base.peak_tflops_nvfp4 ||
      a.peak_tflops_mxfp4 != base.peak_tflops_mxfp4 || a.hbm_tbps != base.hbm_tbps ||
      a.tensor_flops_per_exp != base.tensor_flops_per_exp;
  a.borrowed = base.borrowed || other_silicon;
  if (a.borrowed && a.like_basis.empty()) {
    a.like_basis =
        absl::StrCat("efficiencies of ", a.like,
                     " (its compute peaks, HBM bandwidth or tensor FLOPs per exponential "
                     "differ from this part's)");
  }
  return a;
}

const Accelerator* ScenarioAccelerator(const Scenario& s, const Catalog& catalog) {
  if (s.cluster.described != nullptr) return s.cluster.described.get();
  return catalog.FindAccelerator(s.cluster.accelerator);
}

const Catalog& Catalog::Builtin() {
  static const Catalog* const kCatalog = [] {
    absl::StatusOr<Catalog> c = Parse(embedded::kCatalogText);
    if (!c.ok()) std::abort();  // the build's own data file; catalog_test guards it
    return new Catalog(*std::move(c));
  }();
  return *kCatalog;
}

const Accelerator* Catalog::FindAccelerator(absl::string_view id) const {
  return FindHardware(accelerators_, id);
}

const ModelPreset* Catalog::FindModel(absl::string_view id) const {
  if (const ModelPreset* m = FindEntry(models_, id)) return m;
  const absl::string_view repository = WithoutOrganisation(id);
  if (const ModelPreset* m = FindEntry(models_, repository)) return m;
  const std::string base = WithoutPostTraining(repository);
  return base.size() < repository.size() ? FindEntry(models_, base) : nullptr;
}

const Accelerator* Catalog::FindUsualAccelerator(absl::string_view query, std::string* note) const {
  note->clear();
  const std::string q = Compact(WithoutVendor(query));
  if (q.empty()) return nullptr;
  for (const auto& [id, a] : accelerators_) {
    const bool usual = std::any_of(a.usual_for.begin(), a.usual_for.end(),
                                   [&q](const std::string& n) { return Compact(n) == q; });
    if (!usual) continue;
    // The others the name fits: as ids (leading words) or by every word ("H100 80GB").
    std::vector<std::string> others = Resolve(accelerators_, WithoutVendor(query));
    if (others.size() <= 1) others = Suggest(accelerators_, WithoutVendor(query));
    others.erase(std::remove(others.begin(), others.end(), id), others.end());
    *note = absl::StrCat(
        "accelerator '", query, "' is taken as ", id, ", the part most public runs so named used",
        others.empty() ? "" : absl::StrCat("; it also fits ", absl::StrJoin(others, ", ")),
        ": name the part to be sure");
    return &a;
  }
  // Else the one part whose name holds it ("MI300", "V100 16GB"), for a query long enough to
  // mean something ("GB2" is not).
  if (q.size() < kMinHeldQueryChars) return nullptr;
  const std::vector<std::string> holding = Holding(accelerators_, WithoutVendor(query));
  if (holding.size() != 1) return nullptr;
  *note = absl::StrCat("accelerator '", query, "' is taken as ", holding.front(),
                       ", the one part whose name holds it: name the part to be sure");
  return &accelerators_.find(holding.front())->second;
}

const Accelerator* Catalog::FindSliceAccelerator(absl::string_view query, std::string* note) const {
  note->clear();
  std::string q = absl::AsciiStrToLower(absl::StripAsciiWhitespace(query));
  for (absl::string_view lead : {"cloud tpu ", "tpu ", "tpu-", "tpu_"}) {
    if (absl::StartsWith(q, lead)) {
      q = q.substr(lead.size());
      break;
    }
  }
  const size_t dash = q.rfind('-');
  int cores = 0;
  if (dash == std::string::npos || !absl::SimpleAtoi(q.substr(dash + 1), &cores) || cores <= 0) {
    return nullptr;
  }
  const absl::string_view type = absl::string_view(q).substr(0, dash);
  for (const auto& [id, a] : accelerators_) {
    if (a.tensorcores_per_chip <= 0 ||
        std::none_of(a.slice_types.begin(), a.slice_types.end(),
                     [&type](const std::string& t) { return absl::EqualsIgnoreCase(t, type); })) {
      continue;
    }
    const int chips = std::max(1, cores / a.tensorcores_per_chip);
    *note = absl::StrCat("accelerator '", query, "' is the Cloud TPU slice type of ", id, ": ",
                         a.tensorcores_per_chip == 1
                             ? absl::StrCat(chips, " chips")
                             : absl::StrCat(cores, " TensorCores, ", chips, " chips (",
                                            a.tensorcores_per_chip, " a chip)"),
                         "; the cluster's GPU count counts chips");
    return &a;
  }
  return nullptr;
}

void ApplySystem(const System& system, Cluster* c) {
  if (c->gpus_per_node == 0) c->gpus_per_node = std::min(system.gpus_per_node, c->num_gpus);
  if (c->inter_node_gbps_per_gpu == 0) c->inter_node_gbps_per_gpu = system.net_gbps;
}

const System* Catalog::FindSystem(absl::string_view query) const {
  return FindHardware(systems_, query);
}

std::optional<NamedPart> Catalog::ReadAccelerator(absl::string_view query) const {
  using How = NamedPart::How;
  NamedPart named;
  if ((named.accelerator = FindAccelerator(query)) != nullptr) return named;
  named.how = How::kUsual;
  if ((named.accelerator = FindUsualAccelerator(query, &named.note)) != nullptr) return named;
  named.how = How::kSlice;
  if ((named.accelerator = FindSliceAccelerator(query, &named.note)) != nullptr) return named;
  if (const System* s = FindSystem(query)) {
    named.how = How::kSystem;
    named.system = s;
    named.accelerator = &accelerators_.find(s->accelerator)->second;  // checked when loaded
    named.note =
        absl::StrCat("accelerator '", query, "' is the ", s->name, ": ", s->gpus_per_node, " x ",
                     s->accelerator, " a node, ", absl::StrFormat("%g", s->net_gbps),
                     " Gbit/s of network a GPU between nodes (where the cluster sets "
                     "none)");
    return named;
  }
  return std::nullopt;
}

absl::StatusOr<NamedPart> Catalog::ResolveAccelerator(absl::string_view query,
                                                      absl::string_view path) const {
  if (std::optional<NamedPart> named = ReadAccelerator(query)) return *std::move(named);
  return absl::NotFoundError(absl::StrCat(path, ": ", AcceleratorNotFound(query)));
}

std::string Catalog::AcceleratorNotFound(absl::string_view query) const {
  // A name several systems fit and no part ("DGX A100": its 320 GB and 640 GB systems) names them.
  const absl::string_view match = WithoutVendor(query);
  if (Resolve(accelerators_, match).empty() && Resolve(systems_, match).size() > 1) {
    return NotFoundMessage(systems_, "system", "accelerators", query, match);
  }
  return NotFoundMessage(accelerators_, "accelerator", "accelerators", query, match);
}

std::string Catalog::ModelNotFound(absl::string_view query) const {
  return NotFoundMessage(models_, "model preset", "models", query, WithoutOrganisation(query));
}

}  // namespace scalecast
