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

With --presets, the table model/data/bridge_presets.txt is compiled from (model/recipe_presets.h),
eight columns a row: tag, model, GPU family, precision, GPU count, switches, settings, preset.
To v0.5.0, for each catalog MoE model, GPU and precision, the preset the performance scripts run
(`--config_variant` "v2", else "v1"; before v0.3.0 the one `*_BASE_CONFIG`) and the switches it
turns on; its GPU count and settings are "-". From v0.6.0 (a tag with
src/megatron/bridge/perf_recipes) the presets are Python functions
`<model>_pretrain_<N>gpu_<gpu>_<precision>_config()` that build a ConfigContainer; each without a
further suffix (_large_scale, _dev, _fsdp, ...) is a row, with N as its GPU count, read by
evaluating it symbolically (class Evaluator: `cfg = base_recipe()`, `cfg.model.x = literal`,
helpers called with the config, `if`s decided from literal arguments and assigned fields; an
undecided `if` runs neither branch and is reported on stderr). Its settings are what the config
assigns: recompute=none|selective|full, modules=a+b (selective), layers=N (full, block method),
mtp=N (what a request that names the release and leaves them unset runs: model/recipe_presets.h;
the capacity factor and sequence length are a request's own). The all-to-all overlap is
`comm_overlap.overlap_moe_expert_parallel_comm` (what `moe_a2a_overlap` sets), and the fused
dispatcher needs `moe_token_dispatcher_type` "flex" too. The shipped table is

  /usr/bin/python3 scripts/bridge_moe_configs.py --repo Megatron-Bridge --presets \
      v0.2.0 v0.3.0 v0.3.1 v0.4.0 v0.5.0 v0.6.0 > model/data/bridge_presets.txt

(the tags the 25.11 to 26.06 containers ship, and v0.6.0; v0.2.1's presets are v0.2.0's). For
the 42 rows of data/megatron-bridge-moe-2026.csv from 26.04 and 26.06, whose switches were read
from each run's own config, the table gives the same switches.

Vision-language presets (configs/qwen_vl, perf_recipes/qwen_vl) and dense models' presets are
left out; Qwen presets count when their name is a MoE one (A3B, A22B, Next). Before v0.2.0 the
presets were YAML files, not read. The counts (without --presets) read only
scripts/performance/configs, so only tags before v0.6.0.
"""
import argparse
import ast
import collections
import operator
import re
import subprocess
import sys

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


# --- v0.6.0 on: src/megatron/bridge/perf_recipes, Python functions that build a ConfigContainer ---

PERF_RECIPES = "src/megatron/bridge/perf_recipes"
# A perf recipe function's name: model, GPU count, GPU and precision, and no suffix
# (_large_scale, _dev, _fsdp, _hsdp, _deepep, _paged_stash, ... are left out).
RECIPE_MODEL = {name.lower(): model for name, model in CATALOG_MODEL.items()}
RECIPE_PRECISION = {"bf16": "bf16", "fp8mx": "mxfp8", "fp8cs": "fp8-tensorwise",
                    "fp8sc": "fp8-blockwise", "nvfp4": "nvfp4"}
RECIPE_NAME = re.compile(r"^(?P<model>%s)_pretrain_(?P<gpus>\d+)gpu_"
                         r"(?P<gpu>b200|b300|gb200|gb300|h100)_(?P<precision>%s)_config$"
                         % ("|".join(RECIPE_MODEL), "|".join(RECIPE_PRECISION)))
STR_METHODS = ("replace", "lower", "upper", "startswith", "endswith", "split", "strip")
LIST_METHODS = ("append", "extend", "insert", "remove", "pop", "clear", "update")
MAX_DEPTH = 40


class Unknown:
    """A value the evaluator cannot know (an expression of non-literals, an external object)."""

    def __repr__(self):
        return "?"


UNKNOWN = Unknown()
OBJECT = object()  # state entry: an object was assigned at this path (its fields follow)


class Obj:
    """A config object: the fields under `prefix` ("model.") of a shared state dict mapping
    attribute paths ("model.seq_length") to values. `exists`: known to be an object, not None."""

    def __init__(self, state=None, prefix="", exists=True):
        self.state, self.prefix, self.exists = ({} if state is None else state), prefix, exists

    def get(self, name):
        """The field `name`: its literal value if one was assigned, else a reference to it as
        an object (whose own fields may have been assigned)."""
        key = self.prefix + name
        value = self.state.get(key, UNKNOWN)
        if value is UNKNOWN or value is OBJECT:
            return Obj(self.state, key + ".", exists=value is OBJECT)
        return value

    def set(self, name, value):
        """Assigns `value` to the field `name`; an object's fields are copied below it."""
        key = self.prefix + name
        fields = ({k[len(value.prefix):]: v for k, v in value.state.items()
                   if k.startswith(value.prefix)} if isinstance(value, Obj) else {})
        for k in [k for k in self.state if k == key or k.startswith(key + ".")]:
            del self.state[k]
        if isinstance(value, Obj):
            if value.exists:
                self.state[key] = OBJECT
            self.state.update({f"{key}.{k}": v for k, v in fields.items()})
        else:
            self.state[key] = value

    def fields(self):
        return {k[len(self.prefix):]: v for k, v in self.state.items() if k.startswith(self.prefix)}


class Ref:
    """Something a name resolves to: a function, a class, a module, or an external name."""

    def __init__(self, kind, module=None, node=None, name=""):
        self.kind, self.module, self.node, self.name = kind, module, node, name


class Module:
    """One parsed source file at a tag: its top-level bindings, last one winning."""

    def __init__(self, dotted, path, source):
        self.dotted, self.path = dotted, path
        self.package = dotted if path.endswith("__init__.py") else dotted.rpartition(".")[0]
        self.bindings = {}
        for st in ast.parse(source).body:
            if isinstance(st, (ast.FunctionDef, ast.ClassDef)):
                self.bindings[st.name] = st
            elif isinstance(st, ast.Import):
                for a in st.names:
                    self.bindings[a.asname or a.name.split(".")[0]] = (
                        "module", a.name if a.asname else a.name.split(".")[0])
            elif isinstance(st, ast.ImportFrom):
                base = self.absolute(st.module, st.level)
                for a in st.names:
                    self.bindings[a.asname or a.name] = ("from", base, a.name)
            elif isinstance(st, ast.Assign):
                for t in st.targets:
                    if isinstance(t, ast.Name):
                        self.bindings[t.id] = st.value

    def absolute(self, module, level):
        """The dotted name of an import, relative ones (`from .common import x`) resolved."""
        if not level:
            return module
        parts = self.package.split(".")
        parts = parts[:len(parts) - level + 1]
        return ".".join(parts + ([module] if module else []))


class Evaluator:
    """Evaluates perf recipe functions of one tag symbolically (see evaluate_recipe)."""

    def __init__(self, repo, tag):
        self.repo, self.tag = repo, tag
        self.files = set(git(repo, "ls-tree", "-r", "--name-only", tag,
                             "src/megatron/bridge").split())
        self.modules, self.stack = {}, []
        self.warnings = collections.OrderedDict()  # message -> recipes it came up in
        self.recipe = ""

    def warn(self, module, node, message):
        where = f"{module.path}:{getattr(node, 'lineno', 0)}" if module else "?"
        self.warnings.setdefault(f"{where}: {message}", []).append(self.recipe)

    # -- modules and names --

    def module(self, dotted):
        """The Module of a megatron.bridge module, or None (another package, or no such file)."""
        if not dotted.startswith("megatron.bridge"):
            return None
        if dotted not in self.modules:
            base = "src/" + dotted.replace(".", "/")
            path = next((p for p in (base + ".py", base + "/__init__.py") if p in self.files), None)
            self.modules[dotted] = path and Module(
                dotted, path, git(self.repo, "show", f"{self.tag}:{path}"))
        return self.modules[dotted]

    def lookup(self, module, name, depth=0):
        """What `name` means at the top level of `module`: a Ref, a literal, or UNKNOWN."""
        if depth > MAX_DEPTH:
            return UNKNOWN
        b = module.bindings.get(name)
        if isinstance(b, ast.FunctionDef):
            return Ref("function", module, b, name)
        if isinstance(b, ast.ClassDef):
            return Ref("class", module, b, name)
        if isinstance(b, ast.expr):
            if isinstance(b, ast.Name) and b.id != name:
                return self.lookup(module, b.id, depth + 1)
            return literal_or_unknown(b)
        if isinstance(b, tuple) and b[0] == "module":
            m = self.module(b[1])
            return Ref("module", m, name=b[1]) if m else Ref("external", name=b[1])
        if isinstance(b, tuple):
            _, base, attr = b
            m = self.module(base)
            if m is None:
                return Ref("external", name=attr)
            if attr in m.bindings:
                return self.lookup(m, attr, depth + 1)
            sub = self.module(f"{base}.{attr}")
            return Ref("module", sub, name=sub.dotted) if sub else Ref("external", name=attr)
        return BUILTINS[name] if name in BUILTINS else Ref("external", name=name)

    # -- calls --

    def call_function(self, ref, args, kwargs, node, caller):
        """Evaluates a function's body with its parameters bound; returns its return value."""
        key = (ref.module.path, ref.name)
        if key in self.stack or len(self.stack) > MAX_DEPTH:
            self.warn(caller, node, f"recursive call of {ref.name} not evaluated")
            return UNKNOWN
        fn = ref.node
        frame = {"module": ref.module, "locals": self.bind(fn, args, kwargs), "skipped": False}
        self.stack.append(key)
        try:
            returned, value = self.run_block(fn.body, frame)
        finally:
            self.stack.pop()
        if returned:
            return value
        return UNKNOWN if frame["skipped"] else None  # a skipped statement may have returned

    def bind(self, fn, args, kwargs):
        """Parameters to values: positional, keyword, then the literal defaults."""
        a = fn.args
        params = a.posonlyargs + a.args
        scope = {}
        for p, d in zip(params[len(params) - len(a.defaults):], a.defaults):
            scope[p.arg] = literal_or_unknown(d)
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            if d is not None:
                scope[p.arg] = literal_or_unknown(d)
        scope.update({p.arg: v for p, v in zip(params, args)})
        scope.update({k: v for k, v in kwargs.items()})
        return scope

    def call(self, node, frame):
        """The value of a call expression."""
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in LIST_METHODS:
            base = self.eval(f.value, frame)
            if self.is_config_path(f.value, frame):
                self.warn(frame["module"], node,
                          f"{ast.unparse(f)}(...) ignored (modified in place)")
            if isinstance(base, (list, dict, set, Obj)) or base is UNKNOWN:
                return UNKNOWN
        callee = self.eval(f, frame)
        args = [self.eval(a, frame) for a in node.args if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: self.eval(k.value, frame) for k in node.keywords if k.arg}
        if isinstance(callee, Ref) and callee.kind == "function":
            return self.call_function(callee, args, kwargs, node, frame["module"])
        if callable(callee):  # a builtin
            try:
                return callee(*args, **kwargs)
            except Exception:  # an unknown argument, say
                return UNKNOWN
        if isinstance(callee, Ref) and (callee.kind == "class" or callee.name[:1].isupper()):
            obj = Obj()  # a constructor: its keywords are the fields
            for k, v in kwargs.items():
                obj.set(k, v)
            return obj
        if any(isinstance(v, Obj) for v in args + list(kwargs.values())):
            self.warn(frame["module"], node,
                      f"{ast.unparse(f)}(...) not evaluated, though a config is passed to it")
        return UNKNOWN  # an external function's result

    # -- expressions --

    def eval(self, node, frame):
        """The value of an expression: a literal, an Obj, a Ref, a builtin or UNKNOWN."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in frame["locals"]:
                return frame["locals"][node.id]
            return self.lookup(frame["module"], node.id)
        if isinstance(node, ast.Attribute):
            base = self.eval(node.value, frame)
            if isinstance(base, Obj):
                return base.get(node.attr)
            if isinstance(base, Ref) and base.kind == "module":
                return self.lookup(base.module, node.attr)
            if isinstance(base, Ref) and base.kind in ("external", "class"):
                return Ref("external", name=node.attr)
            if isinstance(base, str) and node.attr in STR_METHODS:
                return literal_builtin(getattr(base, node.attr))
            return UNKNOWN
        if isinstance(node, ast.Subscript):
            return apply(operator.getitem, self.eval(node.value, frame),
                         self.eval(node.slice, frame))
        if isinstance(node, ast.Call):
            return self.call(node, frame)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self.eval(e, frame) for e in node.elts]
            if any(not is_literal(v) for v in items):
                return UNKNOWN
            return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
        if isinstance(node, ast.BoolOp):
            return bool_op(node.op, [self.eval(v, frame) for v in node.values])
        if isinstance(node, ast.UnaryOp):
            v = self.eval(node.operand, frame)
            return apply(OPERATORS[type(node.op)], v)
        if isinstance(node, ast.BinOp):
            return apply(OPERATORS[type(node.op)], self.eval(node.left, frame),
                         self.eval(node.right, frame))
        if isinstance(node, ast.Compare):
            return self.compare(node, frame)
        if isinstance(node, ast.IfExp):
            test = truth(self.eval(node.test, frame))
            if test is UNKNOWN:
                return UNKNOWN
            return self.eval(node.body if test else node.orelse, frame)
        return literal_or_unknown(node)

    def compare(self, node, frame):
        """A comparison chain; `is None` of a known object is decided too."""
        left = self.eval(node.left, frame)
        result = True
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node, frame)
            if isinstance(op, (ast.Is, ast.IsNot)) and None in (left, right) and any(
                    isinstance(v, Obj) and v.exists for v in (left, right)):
                value = isinstance(op, ast.IsNot)
            else:
                value = apply(OPERATORS[type(op)], left, right)
            if value is UNKNOWN:
                return UNKNOWN
            result, left = result and value, right
        return result

    def is_config_path(self, node, frame):
        """Whether `node` is an attribute path on a config object (cfg.model.x)."""
        return isinstance(node, ast.Attribute) and isinstance(self.eval(node.value, frame), Obj)

    # -- statements --

    def run_block(self, body, frame):
        """Runs statements until a return: (returned, value)."""
        for st in body:
            returned, value = self.run(st, frame)
            if returned:
                return True, value
        return False, None

    def run(self, st, frame):
        """Runs one statement: (returned, value)."""
        module = frame["module"]
        if isinstance(st, ast.Return):
            return True, None if st.value is None else self.eval(st.value, frame)
        if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
            value = self.eval(st.value, frame)
            for target in getattr(st, "targets", None) or [st.target]:
                self.assign(target, value, frame)
        elif isinstance(st, ast.AugAssign):
            if self.is_config_path(st.target, frame):
                self.warn(module, st, f"{ast.unparse(st.target)} {type(st.op).__name__}= ignored")
            elif isinstance(st.target, ast.Name):
                self.assign(st.target, apply(OPERATORS[type(st.op)], self.eval(st.target, frame),
                                             self.eval(st.value, frame)), frame)
        elif isinstance(st, ast.Expr):
            self.eval(st.value, frame)
        elif isinstance(st, ast.If):
            test = truth(self.eval(st.test, frame))
            if test is UNKNOWN:
                self.warn(module, st, f"`if {ast.unparse(st.test)}` undecided: neither branch run")
                frame["skipped"] = True
                return False, None
            return self.run_block(st.body if test else st.orelse, frame)
        elif isinstance(st, (ast.Try, ast.With)):  # the body, as if nothing raised
            return self.run_block(st.body + getattr(st, "orelse", []) +
                                  getattr(st, "finalbody", []), frame)
        elif isinstance(st, ast.Raise):
            self.warn(module, st, "raises")
            return True, UNKNOWN
        elif not isinstance(st, (ast.Pass, ast.Assert)):
            self.warn(module, st, f"{type(st).__name__} statement not evaluated")
            frame["skipped"] = True
        return False, None

    def assign(self, target, value, frame):
        """Binds a local name, or sets a field of a config object."""
        if isinstance(target, ast.Name):
            frame["locals"][target.id] = value
        elif isinstance(target, ast.Attribute):
            base = self.eval(target.value, frame)
            if isinstance(base, Obj):  # a function, class or module as a field: not a literal
                opaque = isinstance(value, Ref) or callable(value)
                base.set(target.attr, UNKNOWN if opaque else value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                if isinstance(t, ast.Name):
                    frame["locals"][t.id] = UNKNOWN

    def evaluate_recipe(self, module, name):
        """The config state a perf recipe function returns: {"model.seq_length": 8192, ...}."""
        self.recipe = name
        value = self.call_function(self.lookup(module, name), [], {}, None, module)
        if not isinstance(value, Obj):
            self.warn(module, module.bindings[name], f"{name} returns no config")
            return {}
        return value.fields()


def literal_or_unknown(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return UNKNOWN


def is_literal(v):
    return v is None or isinstance(v, (bool, int, float, str, list, tuple, dict, set))


def truth(v):
    return bool(v) if is_literal(v) else UNKNOWN


def apply(op, *values):
    """`op` of literal values, or UNKNOWN."""
    if not all(is_literal(v) for v in values):
        return UNKNOWN
    try:
        return op(*values)
    except Exception:
        return UNKNOWN


def bool_op(op, values):
    """`and` / `or` of three-valued truths: decided when some operand decides it."""
    truths = [truth(v) for v in values]
    decisive = isinstance(op, ast.Or)
    if decisive in truths:
        return decisive
    return UNKNOWN if UNKNOWN in truths else not decisive


OPERATORS = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b, ast.Not: operator.not_,
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Add: operator.add, ast.Sub: operator.sub,
    ast.Mult: operator.mul, ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod, ast.Pow: operator.pow,
}


def builtin_getattr(obj, name, *default):
    """getattr of a config field: known only where assigned."""
    if isinstance(obj, Obj) and isinstance(name, str) and obj.prefix + name in obj.state:
        return obj.get(name)
    return UNKNOWN


def builtin_hasattr(obj, name):
    return True if builtin_getattr(obj, name) is not UNKNOWN else UNKNOWN


def literal_builtin(fn):
    return lambda *args: apply(fn, *args)


TYPES = (bool, int, float, str, list, tuple, dict, set)
BUILTINS = {"getattr": builtin_getattr, "hasattr": builtin_hasattr,
            **{f.__name__: literal_builtin(f) for f in TYPES + (len, max, min, sorted)}}
TYPE_OF = {BUILTINS[t.__name__]: t for t in TYPES}


def builtin_isinstance(value, types):
    """isinstance against builtin types (a config object is none of them) and project classes
    (a literal is none of them)."""
    types = types if isinstance(types, tuple) else (types,)
    if is_literal(value) and all(isinstance(t, Ref) and t.kind == "class" for t in types):
        return False
    if not all(t in TYPE_OF for t in types):
        return UNKNOWN
    if isinstance(value, Obj) and value.exists:
        return False
    return isinstance(value, tuple(TYPE_OF[t] for t in types)) if is_literal(value) else UNKNOWN


BUILTINS["isinstance"] = builtin_isinstance


def recipe_switches(state, precision):
    """The switches a v0.6.0 config turns on, as default_presets names them."""
    model = lambda k: state.get("model." + k)
    impl = model("cuda_graph_impl")
    graph_sets = [v if isinstance(v, (list, tuple)) else [v]
                  for v in (model("cuda_graph_scope"), model("cuda_graph_modules"))]
    return [f for f, on in (
        ("fused_dispatch", model("moe_flex_dispatcher_backend") in FUSED
         and model("moe_token_dispatcher_type") == "flex"),
        ("cuda_graphs", impl not in (None, "none")),
        ("full_step_graph", impl == "full_iteration" or any(
            "full_iteration" in s for s in graph_sets)),
        ("ep_comm_overlap", state.get("comm_overlap.overlap_moe_expert_parallel_comm") is True),
        ("fp8_attention", state.get("mixed_precision.fp8_dot_product_attention") is True
         and precision != "bf16")) if on]


def recipe_settings(state):
    """The settings column of a v0.6.0 config: recompute and MTP."""
    model = lambda k: state.get("model." + k)
    granularity = model("recompute_granularity")
    modules = model("recompute_modules")
    modules = ["core_attn"] if modules is None else modules  # Megatron-Core's default
    if granularity == "selective" and modules == []:
        granularity = None  # selective recompute of no module recomputes nothing
    settings = [f"recompute={granularity or 'none'}"]
    if granularity == "selective":
        settings.append("modules=" + ("+".join(map(str, modules))
                                      if isinstance(modules, (list, tuple)) else "?"))
    if (model("recompute_granularity") == "full" and model("recompute_method") == "block"
            and model("recompute_num_layers") is not None):
        settings.append(f"layers={model('recompute_num_layers')}")
    if "model.mtp_num_layers" in state:
        settings.append(f"mtp={model('mtp_num_layers') or 0}")
    return settings


def recipe_presets(repo, tag):
    """Every perf recipe of a catalog MoE model at a tag with src/megatron/bridge/perf_recipes:
    yields (model id, GPU, precision, GPU count, switches, settings, function name), and the
    Evaluator with its warnings."""
    ev = Evaluator(repo, tag)
    found = {}
    paths = sorted(p for p in ev.files if p.startswith(PERF_RECIPES + "/") and p.endswith(".py"))
    for path in paths:
        dotted = path[len("src/"):-len(".py")].replace("/", ".").removesuffix(".__init__")
        module = ev.module(dotted)
        for name, node in module.bindings.items():
            m = RECIPE_NAME.match(name)
            if m is None or not isinstance(node, ast.FunctionDef):
                continue
            key = (RECIPE_MODEL[m["model"]], m["gpu"], RECIPE_PRECISION[m["precision"]],
                   int(m["gpus"]))
            if key in found:
                ev.warn(module, node, f"{name} also in {found[key][0].path}: that one kept")
                continue
            found[key] = (module, name)
    rows = []
    for key in sorted(found):
        module, name = found[key]
        state = ev.evaluate_recipe(module, name)
        unknown = sorted(k for k in WATCHED if state.get(k) is UNKNOWN)
        if unknown:
            ev.warn(module, module.bindings[name], f"{name}: unknown {', '.join(unknown)}")
        if (state.get("model.recompute_granularity") == "selective"
                and state.get("model.recompute_modules") == []):
            ev.warn(module, module.bindings[name],
                    f"{name}: selective recompute of recompute_modules=[] written recompute=none")
        rows.append(key[:3] + (key[3], recipe_switches(state, key[2]),
                               recipe_settings(state), name))
    return rows, ev


# The fields the switches and settings read; an unknown value among them is reported.
WATCHED = ["model." + k for k in (
    "moe_flex_dispatcher_backend", "moe_token_dispatcher_type", "cuda_graph_impl",
    "cuda_graph_scope", "cuda_graph_modules", "recompute_granularity", "recompute_modules",
    "recompute_method", "recompute_num_layers", "mtp_num_layers")] + ["comm_overlap.overlap_moe_expert_parallel_comm",
                      "mixed_precision.fp8_dot_product_attention"]


HEADER = """\
# Generated by scripts/bridge_moe_configs.py --presets; do not edit. Megatron-Bridge's MoE
# pre-training presets: to v0.5.0 (scripts/performance/configs/*/*workload_base_configs.py) the
# one its performance scripts run for each model, GPU and precision; from v0.6.0 each function
# <model>_pretrain_<N>gpu_<gpu>_<precision>_config of src/megatron/bridge/perf_recipes (no other
# suffix), read by evaluating it. Columns: tag, model, accelerator family, precision, GPU count N,
# the stack switches the preset turns on (the others off), settings (recompute=none|selective|full,
# modules=a+b, layers=N, mtp=N: what the config assigns), preset. GPU count and
# settings are read from v0.6.0's perf_recipes only: '-' for the older tags."""


def print_presets(repo, tags):
    print(HEADER)
    for tag in tags:
        if git(repo, "ls-tree", "--name-only", tag, PERF_RECIPES).strip():
            print_recipe_presets(repo, tag)
            continue
        for model, gpu, precision, features, name in default_presets(repo, tag):
            print(tag, model, gpu, precision, "-", ",".join(features) or "-", "-", name)


def print_recipe_presets(repo, tag):
    """The rows of a tag with perf_recipes, and the evaluator's warnings on stderr."""
    rows, ev = recipe_presets(repo, tag)
    for model, gpu, precision, gpus, features, settings, name in rows:
        print(tag, model, gpu, precision, gpus, ",".join(features) or "-",
              ",".join(settings) or "-", name)
    for message, recipes in ev.warnings.items():
        names = sorted(set(recipes))
        print(f"warning: {tag}: {message} ({len(names)} recipes, e.g. {names[0]})",
              file=sys.stderr)


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
