#include "model/catalog.h"

#include <cstdlib>
#include <functional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "model/embedded_data.h"
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
  }
  return 0;
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
Setter Str(std::string* out) {
  return [out](absl::string_view v) -> absl::Status {
    *out = std::string(v);
    return absl::OkStatus();
  };
}

std::map<std::string, Setter, std::less<>> AcceleratorKeys(Accelerator* a) {
  return {{"name", Str(&a->name)},
          {"family", Str(&a->family)},
          {"peak_tflops_bf16", Num(&a->peak_tflops_bf16)},
          {"peak_tflops_fp16", Num(&a->peak_tflops_fp16)},
          {"peak_tflops_fp8", Num(&a->peak_tflops_fp8)},
          {"peak_tflops_mxfp8", Num(&a->peak_tflops_mxfp8)},
          {"peak_tflops_nvfp4", Num(&a->peak_tflops_nvfp4)},
          {"hbm_gib", Num(&a->hbm_gib)},
          {"hbm_tbps", Num(&a->hbm_tbps)},
          {"tdp_w", Num(&a->tdp_w)},
          {"power_limit_w", Num(&a->power_limit_w)},
          {"idle_w", Num(&a->idle_w)},
          {"gpus_per_node", Int(&a->gpus_per_node)},
          {"nvlink_domain", Int(&a->nvlink_domain)},
          {"nvlink_gbps", Num(&a->nvlink_gbps)},
          {"net_gbps", Num(&a->net_gbps)},
          {"sms", Int(&a->sms)}};
}

std::map<std::string, Setter, std::less<>> ModelKeys(ModelSpec* m) {
  return {
      {"name", [](absl::string_view) { return absl::OkStatus(); }},  // display only
      {"layers", Int(&m->layers)},
      {"hidden", Int(&m->hidden)},
      {"heads", Int(&m->heads)},
      {"kv_heads", Int(&m->kv_heads)},
      {"ffn_hidden", Int(&m->ffn_hidden)},
      {"vocab", Int(&m->vocab)},
      {"mlp", [m](absl::string_view v) -> absl::Status {
         if (!ParseMlp(v, &m->mlp) || m->mlp == Mlp::kUnspecified) {
           return absl::InvalidArgumentError(absl::StrCat("mlp '", v, "' is not gated or plain"));
         }
         return absl::OkStatus();
       }}};
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
  if (m.layers <= 0 || m.hidden <= 0 || m.heads <= 0 || m.ffn_hidden <= 0 || m.vocab <= 0 ||
      m.mlp == Mlp::kUnspecified) {
    return absl::InvalidArgumentError(
        "layers, hidden, heads, ffn_hidden, vocab and mlp are required");
  }
  if (m.hidden % m.heads != 0) return absl::InvalidArgumentError("heads must divide hidden");
  if (m.kv_heads != 0 && m.heads % m.kv_heads != 0) {
    return absl::InvalidArgumentError("kv_heads must divide heads");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Catalog> Catalog::Parse(absl::string_view text) {
  Catalog c;
  RETURN_IF_ERROR(c.MergeText(text));
  return c;
}

absl::Status Catalog::MergeText(absl::string_view text) {
  // Parse into copies and commit only when the whole text is valid.
  auto accelerators = accelerators_;
  auto models = models_;
  enum class Block { kNone, kAccelerator, kModel } block = Block::kNone;
  Accelerator acc;
  ModelSpec spec;
  std::map<std::string, Setter, std::less<>> keys;
  int block_line = 0;
  int line_no = 0;
  auto fail = [&](int line, absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("catalog line ", line, ": ", what));
  };
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    absl::string_view line = raw;
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (block == Block::kNone) {
      std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (words.size() != 2 || (words[0] != "accelerator" && words[0] != "model")) {
        return fail(line_no, "expected 'accelerator <id>' or 'model <id>'");
      }
      block_line = line_no;
      if (words[0] == "accelerator") {
        block = Block::kAccelerator;
        acc = Accelerator();
        acc.id = std::string(words[1]);
        keys = AcceleratorKeys(&acc);
      } else {
        block = Block::kModel;
        spec = ModelSpec();
        spec.name = std::string(words[1]);
        keys = ModelKeys(&spec);
      }
      continue;
    }
    if (line == "end") {
      if (block == Block::kAccelerator) {
        if (acc.power_limit_w == 0) acc.power_limit_w = acc.tdp_w;
        if (absl::Status s = CheckAccelerator(acc); !s.ok()) {
          return fail(block_line, absl::StrCat("accelerator ", acc.id, ": ", s.message()));
        }
        accelerators[acc.id] = acc;
      } else {
        if (spec.kv_heads == 0) spec.kv_heads = spec.heads;
        if (absl::Status s = CheckModel(spec); !s.ok()) {
          return fail(block_line, absl::StrCat("model ", spec.name, ": ", s.message()));
        }
        models[spec.name] = ModelPreset{spec.name, spec};
      }
      block = Block::kNone;
      continue;
    }
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) return fail(line_no, "expected 'key = value' or 'end'");
    absl::string_view key = absl::StripAsciiWhitespace(line.substr(0, eq));
    absl::string_view value = absl::StripAsciiWhitespace(line.substr(eq + 1));
    auto it = keys.find(key);
    if (it == keys.end()) return fail(line_no, absl::StrCat("unknown key '", key, "'"));
    if (absl::Status s = it->second(value); !s.ok()) {
      return fail(line_no, absl::StrCat(key, ": ", s.message()));
    }
  }
  if (block != Block::kNone) return fail(block_line, "block has no 'end'");
  accelerators_ = std::move(accelerators);
  models_ = std::move(models);
  return absl::OkStatus();
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
  auto it = accelerators_.find(id);
  return it == accelerators_.end() ? nullptr : &it->second;
}

const ModelPreset* Catalog::FindModel(absl::string_view id) const {
  auto it = models_.find(id);
  return it == models_.end() ? nullptr : &it->second;
}

}  // namespace scalecast
