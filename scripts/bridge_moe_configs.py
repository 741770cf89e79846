#!/usr/bin/python3
"""How Megatron-Bridge's MoE performance presets dispatch and capture, tag by tag (model/framework.cc).

The release table gives a NeMo / Megatron-Bridge container the features most of its performance
recipes use. For MoE runs it counts, at each tag, the pre-training presets of
scripts/performance/configs/*/*workload_base_configs.py (one per model, GPU and precision: a
module-level `NAME = WorkloadBaseConfig(...)`, `replace(BASE, ...)` or alias, with the GPU in its
name), following `replace` back to the base so inherited settings count:

  - the dispatcher: `moe_flex_dispatcher_backend` "deepep" or "hybridep" (the flex dispatcher,
    Stack::fused_dispatch), else the all-to-all dispatcher;
  - CUDA graphs: any `cuda_graph_impl` (of any scope), and the whole step
    (`cuda_graph_scope` or `cuda_graph_impl` "full_iteration", Stack::full_step_graph);
  - `moe_a2a_overlap` (Stack::ep_comm_overlap).

Not part of the tests or CI: it reads a Megatron-Bridge git repository, which is not fetched at
build time. Give its path and the tags:

  /usr/bin/python3 scripts/bridge_moe_configs.py --repo Megatron-Bridge v0.2.0 v0.3.0 v0.4.0 v0.5.0

With --by-gpu, a row per tag, GPU and precision (the preset name's GB300_FP8_MX ...): on GB300
and GB200 in MXFP8, v0.5.0's whole-step graphs are 7 of 17 and 6 of 16 presets, a minority.

With --presets, the table model/data/bridge_presets.txt is compiled from (model/recipe_presets.h):
for each catalog MoE model, GPU and precision, the preset the performance scripts run
(`--config_variant` "v2", else "v1"; before v0.3.0 the one `*_BASE_CONFIG`) and the switches it
turns on. The shipped table is

  /usr/bin/python3 scripts/bridge_moe_configs.py --repo Megatron-Bridge --presets \
      v0.2.0 v0.3.0 v0.3.1 v0.4.0 v0.5.0 > model/data/bridge_presets.txt

(the tags the 25.11 to 26.06 containers ship; v0.2.1's presets are v0.2.0's). For the 42 rows of
data/megatron-bridge-moe-2026.csv from 26.04 and 26.06, whose switches were read from each run's
own config, the table gives the same switches.

Vision-language presets (configs/qwen_vl) and dense models' presets are left out; Qwen presets
count when their name is a MoE one (A3B, A22B, Next). Before v0.2.0 the presets were YAML files,
and from v0.6.0 they moved to src/megatron/bridge/perf_recipes: neither is read.
"""
import argparse
import ast
import collections
import re
import subprocess

MOE_FAMILIES = ("deepseek", "qwen", "qwen3", "gpt_oss", "kimi", "nemotronh", "llama")
GPU = re.compile(r"_(GB300|GB200|B300|B200|H100|H200)_")
PRECISION = re.compile(r"_(BF16|FP8_MX|FP8_CS|FP8_SC|NVFP4)")
FUSED = ("deepep", "hybridep")


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True,
                          check=True).stdout


def literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None  # a name or expression: not a setting this script reads


def presets(source):
    """Every module-level preset of a workload config file, with what it inherits."""
    env = {}
    for st in ast.parse(source).body:
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and
                isinstance(st.targets[0], ast.Name)):
            continue
        name, value = st.targets[0].id, st.value
        if isinstance(value, ast.Name):
            env[name] = dict(env.get(value.id, {}))
            continue
        if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Name):
            continue
        if value.func.id == "replace" and value.args and isinstance(value.args[0], ast.Name):
            fields = dict(env.get(value.args[0].id, {}))
        elif value.func.id == "WorkloadBaseConfig":
            fields = {}
        else:
            continue
        fields.update({k.arg: literal(k.value) for k in value.keywords})
        env[name] = fields
    return env


def is_moe_pretrain(family, name):
    if name.startswith("BASE_") or not GPU.search(name):
        return False
    if any(word in name for word in ("FINETUNE", "SFT", "LORA")):
        return False
    if family == "llama":
        return "LLAMA4" in name
    if family in ("qwen", "qwen3"):
        return re.search(r"A\d+B|NEXT", name) is not None
    return family in MOE_FAMILIES


def count(repo, tag, by_gpu=False):
    """Tallies of the tag's MoE presets: one Counter, or one per (GPU, precision) by_gpu."""
    files = [f for f in git(repo, "ls-tree", "-r", "--name-only", tag,
                            "scripts/performance/configs").split()
             if f.endswith("workload_base_configs.py") and "_vl" not in f]
    tallies = collections.defaultdict(collections.Counter)
    for f in files:
        family = f.split("/")[-2]
        for name, d in presets(git(repo, "show", f"{tag}:{f}")).items():
            if not is_moe_pretrain(family, name):
                continue
            precision = PRECISION.search(name)
            key = ((GPU.search(name).group(1), precision.group(1) if precision else "-")
                   if by_gpu else ())
            tally = tallies[key]
            impl, scope = d.get("cuda_graph_impl"), d.get("cuda_graph_scope")
            tally["presets"] += 1
            tally["flex dispatcher"] += d.get("moe_flex_dispatcher_backend") in FUSED
            tally["CUDA graphs"] += impl not in (None, "none")
            tally["whole step"] += "full_iteration" in (impl, scope)
            tally["a2a overlap"] += bool(d.get("moe_a2a_overlap"))
    return tallies if by_gpu else tallies[()]


# The catalog's id of each MoE model the presets name (model/data/catalog.txt); presets of other
# models (Qwen3-Next, dense Nemotron-H) are left out of --presets.
CATALOG_MODEL = {
    "DEEPSEEK_V3": "deepseek-v3", "GPT_OSS_120B": "gpt-oss-120b", "GPT_OSS_20B": "gpt-oss-20b",
    "KIMI_K2": "kimi-k2", "NEMOTRON_3_NANO": "nemotron-3-nano-30b-a3b",
    "NEMOTRON_3_SUPER": "nemotron-3-super-120b", "QWEN3_235B_A22B": "qwen3-235b-a22b",
    "QWEN3_30B_A3B": "qwen3-30b-a3b",
}
# The preset name's precision as scalecast's precision and fp8 recipe.
PRECISION_OF = {"BF16": "bf16", "FP8_CS": "fp8-tensorwise", "FP8_SC": "fp8-blockwise",
                "FP8_MX": "mxfp8", "NVFP4": "nvfp4"}
PRESET_NAME = re.compile(r"^(?P<model>[A-Z0-9_]+?)(?:_PRETRAIN_CONFIG)?_(?P<gpu>GB300|GB200|B300|"
                         r"B200|H100)_(?P<precision>BF16|FP8_CS|FP8_SC|FP8_MX|NVFP4)"
                         r"(?:_(?P<variant>V\d+|BASE_CONFIG))?$")


def default_presets(repo, tag):
    """The preset the performance scripts run for each model, GPU and precision at `tag`:
    scripts/performance/argument_parser.py --config_variant "v2", falling back to "v1" where no
    v2 exists (v0.3.0 on); before v0.3.0 one preset each (`*_BASE_CONFIG`). Yields (model id,
    GPU, precision, features set, preset name)."""
    files = [f for f in git(repo, "ls-tree", "-r", "--name-only", tag,
                            "scripts/performance/configs").split()
             if f.endswith("workload_base_configs.py") and "_vl" not in f]
    chosen = {}
    for f in files:
        for name, d in presets(git(repo, "show", f"{tag}:{f}")).items():
            m = PRESET_NAME.match(name)
            if m is None or m["model"] not in CATALOG_MODEL:
                continue
            key = (CATALOG_MODEL[m["model"]], m["gpu"].lower(), PRECISION_OF[m["precision"]])
            rank = {"V2": 2, "V1": 1}.get(m["variant"] or "", 0)
            if key not in chosen or rank > chosen[key][0]:
                chosen[key] = (rank, name, d)
    for key in sorted(chosen):
        _, name, d = chosen[key]
        impl, scope = d.get("cuda_graph_impl"), d.get("cuda_graph_scope") or []
        features = [f for f, on in (
            ("fused_dispatch", d.get("moe_flex_dispatcher_backend") in FUSED),
            ("cuda_graphs", impl not in (None, "none")),
            ("full_step_graph", "full_iteration" in [impl] + list(scope)),
            ("ep_comm_overlap", bool(d.get("moe_a2a_overlap"))),
            ("fp8_attention", bool(d.get("fp8_dot_product_attention"))
             and key[2] != "bf16")) if on]
        yield key + (features, name)


def print_presets(repo, tags):
    print("# Generated by scripts/bridge_moe_configs.py --presets; do not edit. Megatron-Bridge's MoE")
    print("# pre-training presets (scripts/performance/configs/*/*workload_base_configs.py at each tag),")
    print("# the one its performance scripts run for each model, GPU and precision. Columns: tag, model,")
    print("# accelerator family, precision, the stack switches the preset turns on (the others off), preset.")
    for tag in tags:
        for model, gpu, precision, features, name in default_presets(repo, tag):
            print(tag, model, gpu, precision, ",".join(features) or "-", name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", required=True, help="a Megatron-Bridge git repository")
    parser.add_argument("--by-gpu", action="store_true",
                        help="a row per GPU and precision of each tag")
    parser.add_argument("--presets", action="store_true",
                        help="the table of model/data/bridge_presets.txt")
    parser.add_argument("tags", nargs="+")
    args = parser.parse_args()
    if args.presets:
        print_presets(args.repo, args.tags)
        return
    columns = ["presets", "flex dispatcher", "CUDA graphs", "whole step", "a2a overlap"]
    keys = ["GPU", "precision"] if args.by_gpu else []
    print("| " + " | ".join(["tag"] + keys + columns) + " |")
    print("|---|" + "---|" * len(keys) + "---:|" * len(columns))
    for tag in args.tags:
        if not args.by_gpu:
            t = count(args.repo, tag)
            print(f"| {tag} | " + " | ".join(str(t[c]) for c in columns) + " |")
            continue
        for (gpu, precision), t in sorted(count(args.repo, tag, by_gpu=True).items()):
            cells = [tag, gpu, precision] + [str(t[c]) for c in columns]
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
