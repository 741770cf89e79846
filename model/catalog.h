// The catalog: accelerators (with their usual system) and model presets. The built-in catalog is
// model/data/catalog.txt compiled into the library; users may add or override entries from a file
// of the same format at start (Catalog::MergeText), without rebuilding.
#ifndef SCALECAST_MODEL_CATALOG_H_
#define SCALECAST_MODEL_CATALOG_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "model/limits.h"
#include "model/types.h"

namespace scalecast {

struct Accelerator {
  std::string id;
  std::string name;
  std::string family;  // calibration group: the H100 variants share "h100"
  // Other names of the part, found as ids are (case and separators aside): what nvidia-smi or
  // rocm-smi call it and how vendors and papers write it ("H100 80GB HBM3", "A100-SXM4-40GB"),
  // each naming this part alone; a leading vendor word ("NVIDIA", "Tesla", "AMD Instinct") is
  // dropped from a query first.
  std::vector<std::string> aliases;
  // Names several parts share ("H100", "A100") that mean this one when a request gives no more:
  // the part most of the public runs so named ran on. Found only where a name fits several
  // parts, with a warning naming the others (Catalog::FindUsualAccelerator).
  std::vector<std::string> usual_for;
  // Dense tensor-core peak, TFLOP/s; 0 = precision not supported.
  double peak_tflops_bf16 = 0;
  double peak_tflops_fp16 = 0;
  double peak_tflops_fp8 = 0;
  double peak_tflops_mxfp8 = 0;
  double peak_tflops_nvfp4 = 0;
  double peak_tflops_mxfp4 = 0;  // OCP MX fp4 (AMD CDNA 4)
  double hbm_gib = 0;
  double hbm_tbps = 0;       // TB/s, decimal
  double tdp_w = 0;          // the board design's maximum power
  double power_limit_w = 0;  // the configured cap (<= tdp_w)
  double idle_w = 0;
  int gpus_per_node = 0;
  int nvlink_domain = 0;   // GPUs that share one NVLink/NVSwitch domain
  double nvlink_gbps = 0;  // GB/s per GPU per direction
  double net_gbps = 0;     // Gbit/s of inter-node network per GPU
  // GB/s per GPU per direction between its memory and the host's (PCIe, or NVLink-C2C to a
  // Grace CPU); 0 = not in the entry (no activation offloading then).
  double host_link_gbps = 0;
  // Host memory per GPU in GiB (the usual system's, split evenly over its GPUs): what offloaded
  // activations may fill; 0 = not in the entry.
  double host_memory_gib = 0;
  // The NVLink switches reduce (NVLink SHARP: NVSwitch 3 and later, HGX/DGX H100 on); false for
  // direct NVLink (V100, A100 through NVSwitch 2, PCIe bridges) and AMD's Infinity Fabric.
  bool nvlink_sharp = false;
  // The vendor publishes no power for the part: tdp_w and idle_w are placeholders (Google's TPU
  // v5e, v5p and v6e), and every prediction's watts say so.
  bool power_unpublished = false;
  int sms = 0;
  // Cloud TPU slice types, the accelerator types its API and papers name a slice by ("v5p-128",
  // "v5litepod-256"): the prefixes that name this part, and the TensorCores of one chip, which
  // the number after the prefix counts (Catalog::FindSliceAccelerator); 0 = not a TPU.
  std::vector<std::string> slice_types;
  int tensorcores_per_chip = 0;
  // Dense 16-bit tensor-core FLOPs per softmax exponential, per SM and clock: the tensor rate
  // over the special-function units' (MUFU.EX2) rate. An attention kernel cannot run faster than
  // its exponentials (AttentionTime); 0 = not in the entry (no such bound).
  double tensor_flops_per_exp = 0;
  // Where the entry comes from: "catalog" (built in or --catalog), "registered" (stored through
  // RegisterAccelerator) or "request" (a scenario's accelerator_spec).
  std::string origin = "catalog";
  // A described part, or a catalog entry that names one (`like`, for a part no run was measured
  // on): the catalog part whose fitted efficiencies (its family) it uses ("" for a catalog part
  // with its own); `borrowed` when its compute peaks or HBM bandwidth differ from that part's,
  // when a catalog entry names it, or when the part was picked as the nearest generation
  // (`like_basis` says how): the fitted efficiencies then belong to other silicon and the band
  // widens.
  std::string like;
  bool borrowed = false;
  std::string like_basis;
  AcceleratorSpec spec;  // what described it (empty for a catalog part)

  // Peak for a precision in FLOP/s (not TFLOP/s); 0 when unsupported.
  double PeakFlops(Precision p) const;
  // The dense 16-bit peak MFU is counted against: bf16's, or fp16's on a part without bf16
  // (Volta).
  double SixteenBitPeakFlops() const;
};

// Whether activations can be offloaded to the host: the entry gives a host link and host memory.
inline bool CanOffload(const Accelerator& a) {
  return a.host_link_gbps > 0 && a.host_memory_gib > 0;
}

// A Google TPU (family "tpu-..."; a described part keeps its base's family). A framework that
// runs on GPUs and TPUs may offer a thing on one of them only (CpCommPlatforms).
inline bool IsTpu(const Accelerator& a) { return absl::StartsWith(a.family, "tpu-"); }

// Bounds of a described accelerator's fields (AcceleratorSpec); beyond them INVALID_ARGUMENT.
inline constexpr double kMaxSpecTflops = 1e6;     // ~70x GB300's dense fp4
inline constexpr double kMaxSpecHbmGb = 1 << 16;  // 64 TiB per GPU
inline constexpr double kMaxSpecHbmTbS = 1000;
inline constexpr int kMaxSpecNvlinkDomain = 1 << 16;
inline constexpr double kMaxSpecLinkGbps = 1e5;  // GB/s (NVLink) and Gbit/s (network)
inline constexpr double kMaxSpecWatts = 1e5;
inline constexpr double kMaxSpecTensorFlopsPerExp = 1 << 16;  // 128x Blackwell's 512
inline constexpr size_t kMaxSpecIdBytes = 128;

// A system: the name of a server or a cloud instance type ("DGX H100", "p5.48xlarge",
// "Standard_ND96isr_H100_v5") that stands for a catalog part and its node: how many of the part
// a node holds and the network between nodes, which differ between systems of one part (a
// p4d.24xlarge's 400 Gb/s of EFA for 8 A100s against a DGX A100's 8 x 200 Gb/s).
struct System {
  std::string id;
  std::string name;
  std::vector<std::string> aliases;  // found as ids are (case and separators aside)
  std::string accelerator;           // the catalog part's id
  int gpus_per_node = 0;
  double net_gbps = 0;  // Gbit/s of inter-node network per GPU
};

// A system's node and network in a cluster (its num_gpus set), where the cluster sets none: the
// part's usual ones are another system's.
void ApplySystem(const System& system, Cluster* c);

// How a request's accelerator name was read: the part, the way the name was read, the system it
// stands for (null unless `how` is kSystem), and a note saying how it was read ("" for a part's
// id or alias).
struct NamedPart {
  enum class How { kName, kUsual, kSlice, kSystem };
  const Accelerator* accelerator = nullptr;
  How how = How::kName;
  const System* system = nullptr;
  std::string note;
};

struct ModelPreset {
  std::string id;
  ModelSpec spec;  // spec.name == id
  // Other names of the model, found as ids are: its Hugging Face repository names without the
  // organisation ("Llama-2-70b-hf" for meta-llama/Llama-2-70b-hf), which a query may carry.
  std::vector<std::string> aliases;
};

// Checks a model shape: every field within its proto range (model/field_rules.h: layers, hidden,
// heads, vocab, head width, experts, latent ranks, ...), then what relates fields (kv_heads and
// mlp apart, which the caller checks): mixture-of-experts, latent attention, local attention and
// the hybrid layer pattern against the rest of the shape, and the dense FFN width where some
// layer is dense. Every error is INVALID_ARGUMENT and starts with the field's path under `path`
// ("scenario.workload.model" gives "scenario.workload.model.moe.experts_per_token: 9 is more
// than num_experts 8"; "" gives "moe.experts_per_token: ..."). Any value, however large,
// negative or NaN, gets an error, never a crash.
absl::Status CheckModelFields(const ModelSpec& m, absl::string_view path);
// The same under `path` + `sub` ("scenario", ".workload.model"), joined only for an error.
absl::Status CheckModelFields(const ModelSpec& m, absl::string_view path, absl::string_view sub);

// True when some layer has a dense feed-forward block that ModelSpec.ffn_hidden sizes: a dense
// model, an MoE model's dense layers, or a '-' in the hybrid layer pattern.
bool HasDenseFfn(const ModelSpec& m);

// True when a model sets a field of its shape: any plain ModelSpec field the proto does not mark
// `not_shape` (the name, kv_heads, the router's choices and MTP modules are not; the test is
// generated, model/model_fields_gen.h SetsShapeField). False = a preset reference.
bool HasShape(const ModelSpec& m);

// True when a model sets its name and nothing else: a preset reference whose resolved shape is
// the preset's own, checked when the catalog was loaded.
bool NameOnly(const ModelSpec& m);

// `base` with every field `over` sets (non-zero, non-empty, true) put over it, the name
// included: a preset with the request's changes ("llama3-8b with 40 layers"), or a config.json's
// shape with the request's fields. Training choices (capacity factor, forced balance, MTP
// modules) are fields like the rest.
ModelSpec OverlayShape(const ModelSpec& base, const ModelSpec& over);
class Catalog;

// The catalog part a spec starts from: spec.like when set, else `named` when it is a catalog
// part, else the catalog part nearest in generation to the spec's bf16 peak and HBM bandwidth
// (*basis then says which and why; peak_tflops_bf16 is required). NOT_FOUND / INVALID_ARGUMENT
// naming `path`.like or `path`.peak_tflops_bf16.
absl::StatusOr<const Accelerator*> SpecBase(const Catalog& catalog, absl::string_view named,
                                            const AcceleratorSpec& spec, absl::string_view path,
                                            std::string* basis);

// The accelerator `spec` describes: `base` with each set field of the spec in place of its own.
// Every field is range-checked (errors INVALID_ARGUMENT naming "<path>.<field>"); the result
// keeps the base's family (its fitted efficiencies) and is marked `borrowed` where its compute
// peaks or HBM bandwidth differ from the base's. A spec with no hardware field returns the base
// under the spec's id (a part equal to a catalog part predicts exactly as it).
absl::StatusOr<Accelerator> DescribeAccelerator(const Accelerator& base,
                                                const AcceleratorSpec& spec,
                                                absl::string_view path);

// The accelerator a resolved scenario runs on: the one its accelerator_spec describes, else the
// catalog's entry; nullptr when neither.
const Accelerator* ScenarioAccelerator(const Scenario& s, const Catalog& catalog);

class Catalog {
 public:
  // The built-in catalog (parsed once from the embedded data file).
  static const Catalog& Builtin();
  // Parses a catalog file's text. Errors name the line.
  static absl::StatusOr<Catalog> Parse(absl::string_view text);

  // Adds or replaces entries from another catalog file's text.
  absl::Status MergeText(absl::string_view text);
  // Adds or replaces one accelerator (a registered part).
  void AddAccelerator(Accelerator a);

  // Look up an entry by id. An exact id is found first. Otherwise matching ignores case and the
  // separators '-', '_', '.' and ' ' ("H100_SXM_80GB" and "llama-2-70b" find h100-sxm-80gb and
  // llama2-70b), aliases count as ids ("NVIDIA A100-SXM4-80GB", as nvidia-smi names it, finds
  // a100-sxm-80gb; "meta-llama/Llama-2-70b-hf", a Hugging Face repository, finds llama2-70b), and
  // a query naming the leading words of exactly one id is an alias for it ("h200" finds
  // h200-sxm-141gb). A query that fits several entries ("h100") finds nothing, so a short name
  // never silently picks one; the *NotFound messages then list the choices.
  const Accelerator* FindAccelerator(absl::string_view id) const;
  // A name FindAccelerator finds no one part for: as a part lists it in usual_for ("H100" is
  // h100-sxm-80gb's), else the one part whose id or alias holds it, whole or word by word
  // ("MI300" in mi300x-192gb, "V100 16GB" in v100-sxm2-16gb; 4 characters at least), with `note`
  // saying which part it was taken as (and which others a usual name fits); nullptr (and no
  // note) when no part lists it and none or several hold it ("V100 SXM2").
  const Accelerator* FindUsualAccelerator(absl::string_view query, std::string* note) const;
  // A Cloud TPU slice type ("v5p-128", "TPU v4-512", "v5litepod-256"): the part whose
  // slice_types holds its prefix, with `note` saying how many chips the slice has (its number
  // counts TensorCores); nullptr (and no note) for any other name.
  const Accelerator* FindSliceAccelerator(absl::string_view query, std::string* note) const;
  // A system by its id or alias, a leading vendor word dropped ("NVIDIA DGX H100", "AWS
  // p5.48xlarge"); nullptr when none or several fit.
  const System* FindSystem(absl::string_view query) const;
  // FindAccelerator, else FindUsualAccelerator, else FindSliceAccelerator, else FindSystem (the
  // part and the system, with a note saying what the system is): how requests name their part;
  // nullopt when none reads it.
  std::optional<NamedPart> ReadAccelerator(absl::string_view query) const;
  // ReadAccelerator, else NotFound naming `path` with AcceleratorNotFound's message.
  absl::StatusOr<NamedPart> ResolveAccelerator(absl::string_view query,
                                               absl::string_view path) const;
  // A preset by its id or alias, a Hugging Face repository name (the organisation dropped), or a
  // post-trained variant's repository ("-Instruct", "-chat-hf", "-it": the base model's shape).
  const ModelPreset* FindModel(absl::string_view id) const;
  // The message for a failed FindAccelerator / FindModel (without a field path): for an
  // ambiguous query the entries it matches; otherwise up to 5 close names (by edit distance and
  // prefix); and always where to list them all, e.g. "unknown accelerator 'h100x'; did you mean:
  // h100-pcie-80gb, ...? (run 'scalecast accelerators' to list all)".
  std::string AcceleratorNotFound(absl::string_view query) const;
  std::string ModelNotFound(absl::string_view query) const;
  const std::map<std::string, Accelerator, std::less<>>& accelerators() const {
    return accelerators_;
  }
  const std::map<std::string, ModelPreset, std::less<>>& models() const { return models_; }
  const std::map<std::string, System, std::less<>>& systems() const { return systems_; }

 private:
  std::map<std::string, Accelerator, std::less<>> accelerators_;
  std::map<std::string, ModelPreset, std::less<>> models_;
  std::map<std::string, System, std::less<>> systems_;
};

}  // namespace scalecast

#endif  // SCALECAST_MODEL_CATALOG_H_
