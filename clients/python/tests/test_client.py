"""Tests of the scalecast Python client against a real scalecast-server process.

Environment (set by ctest; see clients/python/CMakeLists.txt):
  SCALECAST_SERVER_BIN   the scalecast-server binary (required)
  SCALECAST_CLI_BIN      the scalecast CLI (OneCsvReaderTest runs it beside the client)
  SCALECAST_SHARED_DATA  shared/data (calibration.csv); default <repo>/../shared/data
  PYTHONPATH             clients/python and <build>/clients/python/gen

Run: /usr/bin/python3 -m unittest -v test_client   (in clients/python/tests)
"""

from __future__ import annotations

import importlib.util
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Optional

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)  # clients/python
if PKG_ROOT not in sys.path:
    sys.path.insert(0, PKG_ROOT)

import scalecast  # noqa: E402
from scalecast import (Client, Plan, PlanOption, PlanProgress, Prediction,  # noqa: E402
                       ScalecastError, SweepProgress, SweepResult)
from scalecast._proto import pb  # noqa: E402
from scalecast.results import Layout  # noqa: E402

SHARED_DATA = os.environ.get(
    "SCALECAST_SHARED_DATA", os.path.join(PKG_ROOT, "..", "..", "..", "shared", "data"))
CALIBRATION_CSV = os.path.join(SHARED_DATA, "calibration.csv")


def _with_releases(path: str) -> str:
    """The CSV with a framework_version column: the release each run's source ran
    (data/source-releases.csv by source, data/mosaicml-releases.csv by id), as a user who knows
    their releases records them; without one a run is priced at today's software. A temporary
    file, which the caller removes."""
    import csv
    import tempfile
    data = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data")
    by_source = {r["source"]: r["framework_version"]
                 for r in csv.DictReader(open(os.path.join(data, "source-releases.csv")))}
    by_id = {r["id"]: r["framework_version"]
             for r in csv.DictReader(open(os.path.join(data, "mosaicml-releases.csv")))}
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    out = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False, newline="")
    writer = csv.DictWriter(out, fieldnames=list(rows[0].keys()) + ["framework_version"])
    writer.writeheader()
    for r in rows:
        r["framework_version"] = by_id.get(r["id"], by_source.get(r["source"], ""))
        writer.writerow(r)
    out.close()
    return out.name
EXAMPLE = os.path.join(PKG_ROOT, "examples", "plan_cluster.py")

LLAMA70 = dict(model="llama2-70b", accelerator="h100-sxm-80gb", seq_len=4096, global_batch=1024)


class ServerProcess:
    """A scalecast-server on 127.0.0.1:<OS-chosen port>, with its own database file."""

    def __init__(self, *extra: str) -> None:
        binary = os.environ.get("SCALECAST_SERVER_BIN")
        if not binary or not os.access(binary, os.X_OK):
            raise unittest.SkipTest("SCALECAST_SERVER_BIN is not an executable scalecast-server")
        self.dir = tempfile.TemporaryDirectory(prefix="scalecast-py-")
        self.stderr = open(os.path.join(self.dir.name, "stderr"), "w+b")
        self.proc = subprocess.Popen(
            [binary, "--listen", "127.0.0.1:0", "--db", os.path.join(self.dir.name, "db"),
             "--metrics-address", "", *extra],
            stdout=subprocess.PIPE, stderr=self.stderr)
        self.banner = self._read_banner(timeout=30.0)
        # "scalecast-server 0.1.0 (model 2026.11.1) listening on 127.0.0.1:PORT, database X"
        self.address = self.banner.split(" listening on ", 1)[1].split(",", 1)[0]
        self.returncode: Optional[int] = None

    def _read_banner(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        buf = b""
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                self.proc.kill()
                self.stderr.seek(0)
                raise RuntimeError(f"scalecast-server did not start: {buf!r} "
                                   f"{self.stderr.read().decode(errors='replace')}")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    continue
                buf += chunk
        return buf.split(b"\n", 1)[0].decode()

    def stop(self) -> int:
        """SIGTERM, then the exit status (killed after 20 s)."""
        if self.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.returncode = self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.returncode = self.proc.wait()
            if self.proc.stdout:
                self.proc.stdout.close()
            self.stderr.close()
            self.dir.cleanup()
        return self.returncode


SERVER: Optional[ServerProcess] = None


def setUpModule() -> None:
    global SERVER
    SERVER = ServerProcess()


def tearDownModule() -> None:
    if SERVER is not None:
        rc = SERVER.stop()
        if rc != 0:
            raise AssertionError(f"scalecast-server exited {rc} on SIGTERM, want 0")


def load_example():
    spec = importlib.util.spec_from_file_location("plan_cluster", EXAMPLE)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["plan_cluster"] = mod
    spec.loader.exec_module(mod)
    return mod


class ClientTestCase(unittest.TestCase):
    client: Client

    @classmethod
    def setUpClass(cls) -> None:
        assert SERVER is not None
        cls.client = Client(SERVER.address, timeout=60)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()


class NotationTest(unittest.TestCase):
    """What the CLI prints too (clients/cli/cli_test.cc, CliFormat.LayoutNotationIsTheGlossarys)."""

    def test_layout_notation_matches_the_cli(self) -> None:
        full = scalecast.Layout(tp=2, pp=4, vpp=4, cp=2, dp=64, sharding="zero1", micro_batch=1,
                                recompute="none", sequence_parallel=True)
        self.assertEqual(str(full), "tp2 pp4 vpp4 cp2 dp64 zero1 mb1 rc=none sp")
        two_level = scalecast.Layout(tp=1, pp=1, cp=16, cp_a2a=4, dp=4, micro_batch=1)
        self.assertEqual(str(two_level), "tp1 pp1 cp16 a2a4 dp4 mb1")
        hsdp = scalecast.Layout(tp=2, pp=4, vpp=1, cp=1, dp=64, sharding="hsdp", shard_group=8,
                                micro_batch=1, recompute="selective")
        self.assertEqual(str(hsdp), "tp2 pp4 dp64 hsdp8 mb1 rc=sel")
        moe = scalecast.Layout(tp=2, pp=4, dp=64, ep=8, etp=2, sharding="zero1", micro_batch=1)
        self.assertEqual(str(moe), "tp2 pp4 dp64 ep8 etp2 zero1 mb1")
        self.assertEqual(str(scalecast.Layout(tp=1, pp=1, dp=8, ep=1, etp=1)), "tp1 pp1 dp8")

    def test_plan_keywords_are_the_plan_messages_fields(self) -> None:
        """Client.plan's own keywords mirror the proto (one home: PlanRequest, PlanConstraints):
        a field added to either, or a keyword the proto lacks, fails here."""
        import inspect
        own = {name for name, p in inspect.signature(Client.plan).parameters.items()
               if p.kind == inspect.Parameter.KEYWORD_ONLY}
        request = {f.name for f in pb.PlanRequest.DESCRIPTOR.fields
                   if f.message_type is None and f.label != f.LABEL_REPEATED}
        # Scenario's own fields at the request's top come from the scenario keywords; the
        # tokens are plan()'s first argument.
        request -= {"framework", "calibration", "hbm_headroom", "tokens"}
        constraints = set(pb.PlanConstraints.DESCRIPTOR.fields_by_name)
        self.assertLessEqual(request | constraints, own)
        self.assertEqual(own - request - constraints,
                         {"gpu_counts", "reliability", "scenario", "progress", "timeout"})

    def test_layout_reads_ep_and_etp(self) -> None:
        layout = scalecast.Layout.from_proto(pb.Parallelism(tp=1, pp=4, dp=64, ep=64, etp=1))
        self.assertEqual((layout.ep, layout.etp), (64, 1))
        self.assertEqual(layout.as_kwargs()["ep"], 64)

    def test_moe_fields_convert_both_ways(self) -> None:
        from scalecast.scenario import build_scenario, scenario_to_dict
        moe = scalecast.MoeSpec(num_experts=256, experts_per_token=8, expert_ffn_hidden=2048,
                                shared_experts=1, dense_layers=3, capacity_factor=1.25,
                                expert_bias=True)
        mla = scalecast.MlaSpec(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
                                qk_rope_head_dim=64, v_head_dim=128)
        s = build_scenario(model="my-moe", layers=61, moe=moe, mla=mla, head_dim=128, ep=64, etp=1,
                           attention_window=4096, full_attention_every=2, mtp_layers=1)
        m = s.workload.model
        self.assertEqual((m.moe.num_experts, m.moe.experts_per_token, m.moe.dense_layers),
                         (256, 8, 3))
        self.assertEqual(m.moe.capacity_factor, 1.25)
        self.assertTrue(m.moe.expert_bias)
        self.assertEqual((m.mla.kv_lora_rank, m.mla.qk_rope_head_dim), (512, 64))
        self.assertEqual((s.parallelism.ep, s.parallelism.etp), (64, 1))
        flat = scenario_to_dict(s)
        self.assertEqual(flat["num_experts"], 256)
        self.assertEqual(flat["kv_lora_rank"], 512)
        self.assertEqual(flat["ep"], 64)
        self.assertIs(flat["expert_bias"], True)
        self.assertEqual(flat["mtp_layers"], 1)
        self.assertNotIn("moe", flat)
        # The flat keywords build the same message.
        self.assertEqual(build_scenario(flat), s)
        # ModelSpec dataclass <-> message.
        spec = scalecast.ModelSpec.from_proto(m)
        self.assertEqual(spec.moe, moe)
        self.assertEqual(spec.mla, mla)
        self.assertEqual(spec.mtp_layers, 1)
        self.assertTrue(spec.is_moe)
        self.assertEqual(spec.to_proto(), m)
        # A dense scenario leaves both messages absent on the wire, as an old client did.
        dense = build_scenario(model="llama2-7b", tp=2)
        self.assertFalse(dense.workload.model.HasField("moe"))
        self.assertFalse(dense.workload.model.HasField("mla"))
        self.assertIsNone(scalecast.ModelSpec.from_proto(dense.workload.model).moe)
        # The dataclasses' attributes are their messages' annotated fields, read from the
        # descriptor (a field added to the proto is one with no line in results.py), and every
        # one of them round-trips.
        import dataclasses
        from scalecast._proto import options_pb
        for cls, message in ((scalecast.ModelSpec, pb.ModelSpec), (scalecast.MoeSpec, pb.MoeSpec),
                             (scalecast.MlaSpec, pb.MlaSpec), (scalecast.Layout, pb.Parallelism)):
            names = {f.name for f in dataclasses.fields(cls)}
            for f in message.DESCRIPTOR.fields:
                if f.GetOptions().HasExtension(options_pb.field):
                    self.assertIn(f.name, names, f"{message.DESCRIPTOR.name}.{f.name}")
        full = pb.Parallelism(tp=2, pp=4, sharding=pb.SHARDING_HSDP, shard_group=8,
                              recompute=pb.RECOMPUTE_SELECTIVE, sequence_parallel=True,
                              recompute_modules=["moe_act"], first_stage_layers=3,
                              recompute_layers=2)
        layout = scalecast.Layout.from_proto(full)
        self.assertEqual((layout.sharding, layout.recompute_modules), ("hsdp", ("moe_act",)))
        self.assertEqual(layout.to_proto(), full)
        self.assertEqual(scalecast.ModelSpec("m", 2, 64, 4, 0, 0, "plain", 10).to_proto(),
                         pb.ModelSpec(name="m", layers=2, hidden=64, heads=4, mlp=pb.MLP_PLAIN,
                                      vocab=10))

    def test_keywords_are_the_protos_annotated_fields(self) -> None:
        # Every keyword the client ever took still sets the same field; the table of them comes
        # from the proto's (scalecast.v1.field) options, and every annotated field is one.
        from scalecast import scenario as sc
        from scalecast._proto import options_pb, pb
        old = {"model": "workload.model.name", "layers": "workload.model.layers",
               "hidden": "workload.model.hidden", "heads": "workload.model.heads",
               "kv_heads": "workload.model.kv_heads", "ffn_hidden": "workload.model.ffn_hidden",
               "mlp": "workload.model.mlp", "vocab": "workload.model.vocab",
               "head_dim": "workload.model.head_dim", "mtp_layers": "workload.model.mtp_layers",
               "hf_config_json": "workload.model.hf_config_json",
               "tie_embeddings": "workload.model.tie_embeddings", "moe": "workload.model.moe",
               "mla": "workload.model.mla", "num_experts": "workload.model.moe.num_experts",
               "experts_per_token": "workload.model.moe.experts_per_token",
               "expert_ffn_hidden": "workload.model.moe.expert_ffn_hidden",
               "shared_experts": "workload.model.moe.shared_experts",
               "shared_ffn_hidden": "workload.model.moe.shared_ffn_hidden",
               "dense_layers": "workload.model.moe.dense_layers",
               "capacity_factor": "workload.model.moe.capacity_factor",
               "force_balance": "workload.model.moe.force_balance",
               "expert_bias": "workload.model.moe.expert_bias",
               "latent_size": "workload.model.moe.latent_size",
               "router_groups": "workload.model.moe.router_groups",
               "router_group_topk": "workload.model.moe.router_group_topk",
               "q_lora_rank": "workload.model.mla.q_lora_rank",
               "kv_lora_rank": "workload.model.mla.kv_lora_rank",
               "qk_nope_head_dim": "workload.model.mla.qk_nope_head_dim",
               "qk_rope_head_dim": "workload.model.mla.qk_rope_head_dim",
               "v_head_dim": "workload.model.mla.v_head_dim",
               "attention_window": "workload.model.attention_window",
               "full_attention_every": "workload.model.full_attention_every",
               "layer_pattern": "workload.model.layer_pattern",
               "mamba_heads": "workload.model.mamba_heads",
               "mamba_head_dim": "workload.model.mamba_head_dim",
               "mamba_state": "workload.model.mamba_state",
               "mamba_groups": "workload.model.mamba_groups", "seq_len": "workload.seq_len",
               "global_batch": "workload.global_batch", "precision": "workload.precision",
               "accelerator": "cluster.accelerator", "gpus": "cluster.num_gpus",
               "gpus_per_node": "cluster.gpus_per_node",
               "network_gbps": "cluster.inter_node_gbps_per_gpu", "tp": "parallelism.tp",
               "pp": "parallelism.pp", "vpp": "parallelism.vpp", "cp": "parallelism.cp",
               "dp": "parallelism.dp", "ep": "parallelism.ep", "etp": "parallelism.etp",
               "sharding": "parallelism.sharding", "shard_group": "parallelism.shard_group",
               "micro_batch": "parallelism.micro_batch", "recompute": "parallelism.recompute",
               "recompute_modules": "parallelism.recompute_modules",
               "sequence_parallel": "parallelism.sequence_parallel", "framework": "framework",
               "framework_version": "stack.version", "tp_comm_overlap": "stack.tp_comm_overlap",
               "dp_overlap": "stack.dp_overlap", "fp8_recipe": "stack.fp8_recipe",
               "attention_kernel": "stack.attention_kernel", "cuda_graphs": "stack.cuda_graphs",
               "compiled": "stack.compiled", "fused_dispatch": "stack.fused_dispatch",
               "ep_comm_overlap": "stack.ep_comm_overlap", "bf16_grads": "stack.bf16_grads",
               "fp8_param_gather": "stack.fp8_param_gather",
               "calibration": "calibration", "label": "label"}
        for key, dotted in old.items():
            self.assertEqual(sc._FIELDS[key][0], dotted, key)
        for alias in ("num_gpus", "inter_node_gbps_per_gpu", "name"):
            self.assertIn(alias, sc.SCENARIO_KEYS)
        annotated = []

        def walk(desc, prefix):
            for f in desc.fields:
                if f.GetOptions().HasExtension(options_pb.field):
                    annotated.append(prefix + f.name)
                if f.message_type is not None and f.label != f.LABEL_REPEATED:
                    walk(f.message_type, prefix + f.name + ".")
        walk(pb.Scenario.DESCRIPTOR, "")
        self.assertEqual(sorted(annotated), sorted(d for d, _ in sc._FIELDS.values()))
        self.assertEqual(sc.build_scenario(num_gpus=64, name="x").cluster.num_gpus, 64)

    def test_moe_values_are_checked_on_the_client(self) -> None:
        from scalecast.scenario import build_scenario
        for bad in (float("nan"), float("inf")):
            with self.assertRaises(scalecast.ScalecastError) as e:
                build_scenario(capacity_factor=bad)
            self.assertIn("scenario.workload.model.moe.capacity_factor", str(e.exception))
        with self.assertRaises(scalecast.ScalecastError) as e:
            build_scenario(num_experts="many")
        self.assertIn("scenario.workload.model.moe.num_experts", str(e.exception))
        # A message keyword takes one rule for every message (the proto's options say which):
        # its dataclass, the message, a dict of its proto fields or a JSON file's path.
        self.assertEqual(build_scenario(moe={"num_experts": 8}).workload.model.moe.num_experts, 8)
        with self.assertRaises(scalecast.ScalecastError) as e:
            build_scenario(moe={"experts": 8})
        self.assertIn("scenario.workload.model.moe", str(e.exception))
        with self.assertRaises(scalecast.ScalecastError) as e:
            build_scenario(moe=8)
        self.assertIn("scenario.workload.model.moe: 8 is not a MoeSpec", str(e.exception))

    def test_stack_keywords_set_only_what_is_given(self) -> None:
        from scalecast.scenario import build_scenario, scenario_to_dict
        s = build_scenario(tp_comm_overlap=False, cuda_graphs=True, fp8_recipe="delayed",
                           attention_kernel="fa3", framework_version="24.09", bf16_grads=True)
        self.assertTrue(s.stack.HasField("tp_comm_overlap"))
        self.assertFalse(s.stack.tp_comm_overlap)
        self.assertFalse(s.stack.HasField("dp_overlap"))
        self.assertEqual(s.stack.version, "24.09")
        self.assertTrue(s.stack.HasField("bf16_grads"))
        self.assertTrue(s.stack.bf16_grads)
        d = scenario_to_dict(s)
        self.assertIs(d["bf16_grads"], True)
        self.assertIs(d["tp_comm_overlap"], False, "an explicit off is kept")
        self.assertNotIn("dp_overlap", d)
        self.assertEqual(d["fp8_recipe"], "delayed")

    def test_recompute_modules_are_a_list_of_names(self) -> None:
        from scalecast.scenario import build_scenario, scenario_to_dict
        s = build_scenario(recompute_modules="mla_up_proj,moe_act")
        self.assertEqual(list(s.parallelism.recompute_modules), ["mla_up_proj", "moe_act"])
        s = build_scenario(s, recompute_modules=["moe"])
        self.assertEqual(list(s.parallelism.recompute_modules), ["moe"])
        self.assertEqual(scenario_to_dict(s)["recompute_modules"], ["moe"])
        with self.assertRaises(scalecast.ScalecastError) as e:
            build_scenario(recompute_modules=[1])
        self.assertIn("scenario.parallelism.recompute_modules", str(e.exception))
        layout = Layout.from_proto(pb.Parallelism(tp=1, pp=16, dp=16, ep=8, micro_batch=1,
                                                  recompute=pb.RECOMPUTE_SELECTIVE,
                                                  recompute_modules=["mla_up_proj"]))
        self.assertEqual(str(layout), "tp1 pp16 dp16 ep8 mb1 rc=mla_up_proj")

    def test_uncertainty_band_reads_into_the_dataclass(self) -> None:
        msg = pb.Prediction(tokens_per_s_per_gpu=900.0)
        self.assertIsNone(Prediction.from_proto(msg).uncertainty)
        msg.uncertainty.low, msg.uncertainty.high, msg.uncertainty.level = 850.0, 950.0, 0.8
        msg.uncertainty.basis = "calibrated: 81 runs on h100"
        band = Prediction.from_proto(msg).uncertainty
        self.assertEqual((band.low, band.high, band.level), (850.0, 950.0, 0.8))
        self.assertEqual(band.basis, "calibrated: 81 runs on h100")
        self.assertEqual(str(band), "850.0-950.0 tokens/s per GPU (80% band)")


class InstallTest(unittest.TestCase):
    def test_setup_py_builds_a_package_that_imports_with_its_stubs(self) -> None:
        with tempfile.TemporaryDirectory(prefix="scalecast-setup-") as tmp:
            out = subprocess.run(
                ["/usr/bin/python3", os.path.join(PKG_ROOT, "setup.py"), "-q", "build",
                 "--build-base", tmp], capture_output=True, text=True, cwd=tmp, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr)
            lib = os.path.join(tmp, "lib")
            self.assertTrue(os.path.isfile(os.path.join(
                lib, "scalecast", "_gen", "proto", "scalecast", "v1", "scalecast_pb2.py")))
            # Only the built package on the path: no source tree, no build tree, no env hint.
            env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": lib, "PYTHONDONTWRITEBYTECODE": "1"}
            probe = subprocess.run(
                ["/usr/bin/python3", "-c",
                 "import scalecast, scalecast._proto as p; print(scalecast.__file__); "
                 "print('scenario' in p.pb.PredictResponse.DESCRIPTOR.fields_by_name)"],
                capture_output=True, text=True, cwd=tmp, env=env, timeout=60)
            self.assertEqual(probe.returncode, 0, probe.stderr)
            where, has_scenario = probe.stdout.split()
            self.assertTrue(where.startswith(lib), where)
            self.assertEqual(has_scenario, "True")


class PredictTest(ClientTestCase):
    def test_predict_echoes_the_resolved_scenario(self) -> None:
        p = self.client.predict(gpus=512, **LLAMA70)
        self.assertEqual(p.scenario["precision"], "bf16")
        self.assertEqual(p.scenario["layers"], 80)
        self.assertEqual(p.scenario["gpus_per_node"], 8)
        self.assertGreater(p.scenario["network_gbps"], 0)
        self.assertIs(p.scenario["bf16_grads"], False, "the resolved stack: fp32 gradients")
        halves = self.client.predict(p.scenario, bf16_grads=True)  # the same resolved layout
        self.assertIs(halves.scenario["bf16_grads"], True)
        self.assertLess(halves.memory.gradients_bytes, p.memory.gradients_bytes)
        self.assertIsNotNone(p.uncertainty, "the server sends an 80 % band")
        self.assertEqual(p.uncertainty.level, 0.8)
        self.assertLess(p.uncertainty.low, p.tokens_per_s_per_gpu)
        self.assertGreater(p.uncertainty.high, p.tokens_per_s_per_gpu)
        self.assertTrue(p.uncertainty.basis)
        cmp = self.client.compare([dict(gpus=256), dict(gpus=512)], **LLAMA70)
        self.assertEqual([x.scenario["gpus"] for x in cmp.predictions], [256, 512])
        self.assertEqual(cmp.predictions[0].scenario["precision"], "bf16")
        res = self.client.sweep_results([256], top_k=1, **LLAMA70)
        self.assertEqual(res[0].best.scenario["precision"], "bf16")

    def test_models_from_their_config_json(self) -> None:
        path = os.path.join(PKG_ROOT, "..", "..", "tests", "data", "hf", "llama3.1-8b.json")
        spec = scalecast.ModelSpec.from_hf_config(path)
        self.assertIn('"model_type": "llama"', spec.hf_config_json)
        self.assertEqual(spec.to_proto().hf_config_json, spec.hf_config_json)
        # The server maps the keys: the resolved shape comes back; a set field overrides it.
        p = self.client.predict(model=spec, layers=40, gpus=64, accelerator="h100-sxm-80gb",
                                seq_len=4096, global_batch=512)
        self.assertEqual(p.scenario["layers"], 40)
        self.assertEqual(p.scenario["hidden"], 4096)
        self.assertEqual(p.scenario["vocab"], 128256)
        self.assertTrue(any("rope_theta" in w for w in p.warnings), p.warnings)
        with self.assertRaises(ScalecastError) as e:
            self.client.predict(model=scalecast.ModelSpec("", 0, 0, 0, 0, 0, "", 0,
                                                          hf_config_json="{\"model_type\": 1}"),
                                gpus=64, accelerator="h100-sxm-80gb", seq_len=4096,
                                global_batch=512)
        self.assertIn("scenario.workload.model.hf_config_json: model_type", str(e.exception))

    def test_infeasible_names_the_nearest_that_work(self) -> None:
        with self.assertRaises(ScalecastError) as ctx:
            self.client.predict(gpus=500, **dict(LLAMA70, global_batch=7))
        self.assertEqual(ctx.exception.code, grpc.StatusCode.FAILED_PRECONDITION)
        self.assertIn("Nearest that work: ", ctx.exception.message)
        self.assertIn("(500 GPUs)", ctx.exception.message)

    def test_batch_that_does_not_split_is_answered_at_the_nearest(self) -> None:
        p = self.client.predict(gpus=500, **LLAMA70)
        self.assertEqual(p.scenario["global_batch"], 1025)
        self.assertTrue(any(w.startswith("scenario.workload.global_batch: 1024 sequences")
                            for w in p.warnings), p.warnings)


    def test_health_serving(self) -> None:
        self.assertEqual(self.client.health(), "SERVING")
        self.assertEqual(self.client.health("scalecast.v1.Scalecast"), "SERVING")

    def test_catalog(self) -> None:
        accels = {a.id: a for a in self.client.accelerators()}
        self.assertIn("h100-sxm-80gb", accels)
        h100 = accels["h100-sxm-80gb"]
        self.assertGreater(h100.peak_tflops["bf16"], 900)
        self.assertEqual(h100.hbm_bytes, 80 * 2**30)
        systems = {s.id: s for s in self.client.systems()}
        self.assertEqual(systems["p4d.24xlarge"].accelerator, "a100-sxm-40gb")
        self.assertEqual(systems["p4d.24xlarge"].network_gbps_per_gpu, 50)
        self.assertIn("DGX H100", systems["dgx-h100"].aliases)
        p = self.client.predict(model="llama2-7b", accelerator="p4d.24xlarge", gpus=64,
                                seq_len=4096, global_batch=256)
        self.assertEqual(p.scenario["accelerator"], "a100-sxm-40gb")
        self.assertEqual(p.scenario["network_gbps"], 50)
        models = {m.name: m for m in self.client.models()}
        self.assertEqual(models["llama2-70b"].layers, 80)
        self.assertEqual(models["llama2-70b"].mlp, "gated")
        self.assertEqual(models["llama2-70b"].kv_heads, 8)

    def test_predict_is_sane_and_fills_the_layout(self) -> None:
        p = self.client.predict(gpus=2048, tp=2, label="plan-a", **LLAMA70)
        self.assertIsInstance(p, Prediction)
        self.assertEqual(p.label, "plan-a")
        self.assertTrue(p.model_version)
        self.assertEqual(p.calibration, "default")
        # The layout: the request's tp, the rest chosen by the planner, covering every GPU.
        self.assertEqual(p.layout.tp, 2)
        for degree in (p.layout.pp, p.layout.cp, p.layout.dp, p.layout.micro_batch):
            self.assertGreaterEqual(degree, 1)
        self.assertEqual(p.layout.tp * p.layout.pp * p.layout.cp * p.layout.dp, 2048)
        self.assertEqual(p.gpus, 2048)
        self.assertTrue(p.layout.sharding)
        self.assertTrue(p.layout.recompute)
        # Throughput, step time and utilisation agree with each other.
        self.assertAlmostEqual(p.tokens_per_s / p.tokens_per_s_per_gpu, 2048, delta=1e-6 * 2048)
        self.assertAlmostEqual(p.step_time_s * p.tokens_per_s, 1024 * 4096, delta=1e-6 * 1024 * 4096)
        self.assertGreater(p.mfu, 0.15)
        self.assertLess(p.mfu, 0.7)
        self.assertGreaterEqual(p.hfu, p.mfu)
        # 6 * params FLOPs per token, roughly: 70B on H100 gives a few hundred TFLOP/s per GPU.
        self.assertGreater(p.model_tflops_per_gpu, 150)
        self.assertLess(p.model_tflops_per_gpu, 700)
        self.assertAlmostEqual(p.model_tflops_per_gpu / 989.0, p.mfu, delta=0.02)
        # Time breakdown: compute dominates and the critical path fits in the step.
        t = p.time
        self.assertGreater(t.compute_s, 0.5 * p.step_time_s)
        self.assertLessEqual(t.compute_s + t.recompute_s + t.exposed_comm_s, p.step_time_s * 1.001)
        kinds = {c.kind for c in t.comm}
        self.assertIn("tp", kinds)
        self.assertTrue(any(k.startswith("dp_") for k in kinds), kinds)
        for c in t.comm:
            self.assertLessEqual(c.exposed_s, c.total_s + 1e-12)
            self.assertGreater(c.ranks, 1)
        # Memory fits on 80 GB, and the parts add up.
        m = p.memory
        self.assertTrue(p.fits)
        self.assertEqual(m.capacity_bytes, 80 * 2**30)
        self.assertLessEqual(m.total_bytes, m.capacity_bytes)
        self.assertEqual(m.total_bytes, m.weights_bytes + m.gradients_bytes + m.optimizer_bytes
                         + m.activations_bytes + m.other_bytes)
        # Power: below the 700 W TDP, and J/token = cluster power / throughput.
        self.assertGreater(p.power.watts_per_gpu, 200)
        self.assertLessEqual(p.power.watts_per_gpu, 700)
        self.assertAlmostEqual(p.power.joules_per_token, p.power.cluster_kw * 1e3 / p.tokens_per_s,
                               delta=0.2 * p.power.joules_per_token)
        self.assertEqual(p.warnings, [])

    def test_scenario_forms_agree(self) -> None:
        a = self.client.predict(gpus=1024, tp=4, pp=2, sharding="zero1", **LLAMA70)
        base = dict(LLAMA70, gpus=1024, tp=4, pp=2, sharding="SHARDING_ZERO1")
        b = self.client.predict(scenario=base)
        proto = scalecast.build_scenario(base)
        c = self.client.predict(proto)
        nested = {"workload": {"model": {"name": "llama2-70b"}, "seqLen": 4096, "globalBatch": 1024},
                  "cluster": {"accelerator": "h100-sxm-80gb", "numGpus": 1024},
                  "parallelism": {"tp": 4, "pp": 2, "sharding": "SHARDING_ZERO1"}}
        d = self.client.predict(scenario=nested)
        for other in (b, c, d):
            self.assertEqual(other.layout, a.layout)
            self.assertAlmostEqual(other.tokens_per_s, a.tokens_per_s, places=6)
        # Keywords override the base scenario.
        e = self.client.predict(scenario=base, gpus=2048)
        self.assertEqual(e.gpus, 2048)
        self.assertEqual(scalecast.scenario_to_dict(proto)["sharding"], "zero1")

    def test_compare_deltas(self) -> None:
        cmp = self.client.compare([dict(gpus=1024, label="1k"), dict(gpus=2048, label="2k"),
                                   dict(gpus=2048, precision="fp8", label="2k-fp8")],
                                  tp=2, **LLAMA70)
        self.assertEqual([p.label for p in cmp.predictions], ["1k", "2k", "2k-fp8"])
        self.assertEqual(len(cmp.deltas), 3)
        d0, d1, d2 = cmp.deltas
        self.assertAlmostEqual(d0.throughput_ratio, 1.0)
        self.assertAlmostEqual(d0.mfu_delta, 0.0)
        p0, p1, p2 = cmp.predictions
        self.assertAlmostEqual(d1.throughput_ratio, p1.tokens_per_s / p0.tokens_per_s, places=6)
        self.assertAlmostEqual(d1.per_gpu_throughput_ratio,
                               p1.tokens_per_s_per_gpu / p0.tokens_per_s_per_gpu, places=6)
        self.assertAlmostEqual(d1.scaling_efficiency, d1.throughput_ratio / 2, places=6)
        self.assertAlmostEqual(d1.mfu_delta, p1.mfu - p0.mfu, places=9)
        self.assertAlmostEqual(d1.joules_per_token_ratio,
                               p1.power.joules_per_token / p0.power.joules_per_token, places=6)
        self.assertGreater(d1.throughput_ratio, 1.5)   # doubling GPUs helps...
        self.assertLessEqual(d1.scaling_efficiency, 1.0 + 1e-9)  # ...but not superlinearly
        self.assertGreater(d2.throughput_ratio, d1.throughput_ratio)  # fp8 is faster


class AcceleratorTest(ClientTestCase):
    def test_register_use_and_delete_an_accelerator(self) -> None:
        a = self.client.register_accelerator({"id": "py-h100-800g", "like": "h100-sxm-80gb",
                                              "inter_node_gbps_per_gpu": 800})
        try:
            self.assertEqual(a.origin, "registered")
            self.assertEqual(a.like, "h100-sxm-80gb")
            self.assertEqual(a.network_gbps_per_gpu, 800)
            listed = {x.id: x for x in self.client.accelerators()}
            self.assertEqual(listed["py-h100-800g"].origin, "registered")
            self.assertEqual(listed["h100-sxm-80gb"].origin, "catalog")
            with self.assertRaises(ScalecastError) as e:
                self.client.register_accelerator({"id": "py-h100-800g", "like": "h100-sxm-80gb"})
            self.assertEqual(e.exception.code, grpc.StatusCode.ALREADY_EXISTS)
            p = self.client.predict(gpus=512, **dict(LLAMA70, accelerator="py-h100-800g"))
            self.assertEqual(p.scenario["accelerator"], "py-h100-800g")
            self.assertGreater(p.tokens_per_s, 0)
        finally:
            self.client.delete_accelerator("py-h100-800g")
        with self.assertRaises(ScalecastError) as e:
            self.client.delete_accelerator("py-h100-800g")
        self.assertEqual(e.exception.code, grpc.StatusCode.NOT_FOUND)

    def test_a_request_spec_and_headroom_round_trip(self) -> None:
        p = self.client.predict(gpus=512, accelerator_spec={"hbm_tb_s": 4.8}, hbm_headroom=0.1,
                                **LLAMA70)
        self.assertEqual(p.scenario["accelerator_spec"], {"hbm_tb_s": 4.8})
        self.assertEqual(p.scenario["hbm_headroom"], 0.1)
        self.assertLessEqual(p.memory.total_bytes, 0.9 * p.memory.capacity_bytes)
        again = self.client.predict(p.scenario)  # the echo predicts the same
        self.assertEqual(again.tokens_per_s, p.tokens_per_s)
        with self.assertRaises(ScalecastError) as e:
            self.client.predict(gpus=512, accelerator_spec={"hbm_gb": -1}, **LLAMA70)
        self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("scenario.cluster.accelerator_spec.hbm_gb", e.exception.message)


class MoeTest(ClientTestCase):
    def test_models_lists_the_moe_presets_with_their_shape(self) -> None:
        models = {m.name: m for m in self.client.models()}
        for name in ("deepseek-v3", "kimi-k2", "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-20b",
                     "gpt-oss-120b", "mixtral-8x7b", "mixtral-8x22b", "llama4-scout",
                     "llama4-maverick", "grok-1", "nemotron-3-nano-30b-a3b"):
            self.assertIn(name, models)
            self.assertTrue(models[name].is_moe, name)
            # A token passes through its top-k experts only.
            self.assertGreater(models[name].activated_params, 0, name)
            self.assertLess(models[name].activated_params, models[name].total_params, name)
        dsv3 = models["deepseek-v3"]
        self.assertEqual(dsv3.moe, scalecast.MoeSpec(256, 8, 2048, 1, 0, 3, 0.0, False,
                                                     router_groups=8, router_group_topk=4))
        self.assertEqual(dsv3.mla, scalecast.MlaSpec(1536, 512, 128, 64, 128))
        nano = models["nemotron-3-nano-30b-a3b"]
        self.assertEqual(len(nano.layer_pattern), nano.layers)
        self.assertEqual((nano.mamba_heads, nano.mamba_state, nano.mamba_groups), (64, 128, 8))
        self.assertEqual(models["gpt-oss-120b"].attention_window, 128)
        # Dense presets: no MoE, every parameter active.
        self.assertIsNone(models["llama2-70b"].moe)
        self.assertEqual(models["llama2-70b"].activated_params, models["llama2-70b"].total_params)

    def test_moe_field_errors_name_the_path(self) -> None:
        shape = dict(model="tiny-moe", layers=4, hidden=1024, heads=8, vocab=1000,
                     accelerator="h100-sxm-80gb", gpus=8, seq_len=4096, global_batch=64)
        cases = [
            (dict(num_experts=8, experts_per_token=9, expert_ffn_hidden=512),
             "scenario.workload.model.moe.experts_per_token: 9 is more than num_experts 8"),
            (dict(num_experts=8, experts_per_token=2, expert_ffn_hidden=512, capacity_factor=0.5),
             "scenario.workload.model.moe.capacity_factor: 0.5 is neither 0"),
            (dict(num_experts=8, experts_per_token=2, expert_ffn_hidden=512, ep=2**31 - 1),
             "scenario.parallelism.ep: 2147483647 is out of range"),
            (dict(ffn_hidden=4096, kv_lora_rank=512),
             "scenario.workload.model.mla.v_head_dim: 0 is out of range"),
            (dict(ffn_hidden=4096, layer_pattern="M*x*"),
             "scenario.workload.model.layer_pattern: character 3 is 'x'"),
        ]
        for extra, message in cases:
            with self.assertRaises(scalecast.ScalecastError) as e:
                self.client.predict(**shape, **extra)
            self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT, message)
            self.assertIn(message, str(e.exception))


class SweepTest(ClientTestCase):
    COUNTS = [256, 512, 1024, 2048]

    def test_sweep_progress_then_one_result_per_count(self) -> None:
        events = list(self.client.sweep(self.COUNTS, top_k=3, refresh=True, **LLAMA70))
        progress = [e for e in events if isinstance(e, SweepProgress)]
        results = [e for e in events if isinstance(e, SweepResult)]
        self.assertGreater(len(progress), 0)
        self.assertIsInstance(events[0], SweepProgress)
        self.assertIsInstance(events[-1], SweepResult)
        self.assertEqual([r.gpu_count for r in results], self.COUNTS)
        for e in progress:
            self.assertIn(e.gpu_count, self.COUNTS)
            self.assertLessEqual(e.evaluated_count, e.total_count)
        # Every count's results come after progress for that count.
        first_result_at = events.index(results[0])
        self.assertTrue(any(isinstance(e, SweepProgress) and e.gpu_count == 256
                            for e in events[:first_result_at]))
        prev = 0.0
        for r in results:
            self.assertFalse(r.cached)
            self.assertIsNotNone(r.best)
            assert r.best is not None
            self.assertEqual(r.best.gpus, r.gpu_count)
            self.assertTrue(r.best.fits)
            self.assertLessEqual(len(r.top), 3)
            self.assertEqual(r.top[0].tokens_per_s, r.best.tokens_per_s)
            self.assertEqual(sorted((p.tokens_per_s for p in r.top), reverse=True),
                             [p.tokens_per_s for p in r.top])
            self.assertGreater(r.evaluated_count, 0)
            self.assertGreater(r.best.tokens_per_s, prev)  # more GPUs, more throughput here
            prev = r.best.tokens_per_s
        # The same sweep again comes from the cache, with the same answers.
        again = self.client.sweep_results(self.COUNTS, top_k=3, **LLAMA70)
        self.assertTrue(all(r.cached for r in again))
        self.assertEqual([r.best.layout for r in again if r.best],
                         [r.best.layout for r in results if r.best])

    def test_energy_objective(self) -> None:
        fast = self.client.sweep_results([1024], **LLAMA70)[0]
        frugal = self.client.sweep_results([1024], objective="energy", **LLAMA70)[0]
        assert fast.best is not None and frugal.best is not None
        self.assertLessEqual(frugal.best.power.joules_per_token,
                             fast.best.power.joules_per_token * (1 + 1e-9))
        self.assertGreaterEqual(fast.best.tokens_per_s, frugal.best.tokens_per_s * (1 - 1e-9))

    def test_leaving_the_loop_early_cancels(self) -> None:
        for event in self.client.sweep([256, 512], refresh=True, **LLAMA70):
            break
        self.assertEqual(self.client.health(), "SERVING")


class ErrorTest(ClientTestCase):
    def assertRaisesCode(self, code: grpc.StatusCode, fn, *args, **kwargs) -> ScalecastError:
        with self.assertRaises(ScalecastError) as cm:
            fn(*args, **kwargs)
        self.assertEqual(cm.exception.code, code, cm.exception.message)
        return cm.exception

    def test_tp_not_dividing_heads_is_invalid_argument(self) -> None:
        e = self.assertRaisesCode(grpc.StatusCode.INVALID_ARGUMENT, self.client.predict,
                                  gpus=2048, tp=3, **LLAMA70)
        self.assertIn("parallelism.tp", e.message)
        self.assertIn("parallelism.tp", str(e))

    def test_unknown_accelerator_and_preset_are_not_found(self) -> None:
        e = self.assertRaisesCode(grpc.StatusCode.NOT_FOUND, self.client.predict,
                                  **dict(LLAMA70, accelerator="h900-imaginary"), gpus=64)
        self.assertIn("h900-imaginary", e.message)
        self.assertRaisesCode(grpc.StatusCode.NOT_FOUND, self.client.predict,
                              **dict(LLAMA70, model="llama9-1t"), gpus=64)
        self.assertRaisesCode(grpc.StatusCode.NOT_FOUND, self.client.predict,
                              calibration="no-such-profile", gpus=64, **LLAMA70)

    def test_errors_in_streams_and_compare(self) -> None:
        self.assertRaisesCode(grpc.StatusCode.INVALID_ARGUMENT, lambda: list(
            self.client.sweep([256], tp=3, **LLAMA70)))
        self.assertRaisesCode(grpc.StatusCode.RESOURCE_EXHAUSTED, lambda: list(
            self.client.sweep([8 * i for i in range(1, 200)], **LLAMA70)))
        e = self.assertRaisesCode(grpc.StatusCode.INVALID_ARGUMENT, self.client.compare,
                                  [dict(gpus=64), dict(gpus=64, tp=3)], **LLAMA70)
        self.assertIn("parallelism.tp", e.message)

    def test_client_side_checks(self) -> None:
        e = self.assertRaisesCode(grpc.StatusCode.INVALID_ARGUMENT, self.client.predict,
                                  precision="bf17", gpus=8, **{k: v for k, v in LLAMA70.items()})
        self.assertIn("workload.precision", e.message)
        with self.assertRaises(TypeError):
            self.client.predict(gpus=8, tensor_parallel=2, **LLAMA70)  # type: ignore[call-arg]

    def test_unreachable_server_is_unavailable(self) -> None:
        with Client("127.0.0.1:1", timeout=2) as c:
            self.assertRaisesCode(grpc.StatusCode.UNAVAILABLE, c.health)


# Every framework the model knows (model/framework.cc), each row with a blank sharding (the
# framework's default) and, where the framework offers tensor parallelism, tp 2 with a blank
# sequence_parallel (the framework's choice).
FRAMEWORKS = ("megatron", "nemo", "megatron-deepspeed", "torchtitan", "composer-fsdp", "fms-fsdp",
              "deepspeed", "maxtext", "paxml")
WITHOUT_TP = ("composer-fsdp", "fms-fsdp", "deepspeed")
CSV_HEADER = ("id,source,framework,model,layers,hidden,heads,kv_heads,ffn_hidden,mlp,vocab,seq_len,"
              "accelerator,num_gpus,gpus_per_node,precision,tp,pp,vpp,cp,dp,sharding,micro_batch,"
              "global_batch,recompute,tokens_per_s_per_gpu,note\n")


def edge_csv() -> str:
    """Rows over the reader's edges: blank sharding per framework, tp > 1 with sequence
    parallelism left blank, recompute with Megatron-Core modules, HSDP without a shard group, a
    blank global batch with pipeline stages, a quoted note."""
    rows = []
    for i, fw in enumerate(FRAMEWORKS):
        tp, dp = (1, 64) if fw in WITHOUT_TP else (2, 32)
        rows.append(f"f{i},src,{fw},m,32,4096,32,8,11008,gated,32000,4096,h100-sxm-80gb,64,8,bf16,"
                    f"{tp},1,,,{dp},,1,256,selective,{3000 + i},\n")
    rows += [
        'pp,src,megatron,m,32,4096,32,,11008,gated,32000,4096,h100-sxm-80gb,64,8,bf16,'
        '2,4,,,8,,2,,selective: layernorm+mlp,3100,"a ""quoted"" note, with comma"\n',
        "hsdp,src,fms-fsdp,m,32,4096,32,8,11008,gated,32000,4096,a100-sxm-80gb,128,,bf16,"
        ",,,,128,hsdp,,,,3200,\n",
        "open,src,torchtitan,m,32,4096,32,8,11008,gated,32000,4096,h100-sxm-80gb,64,8,fp8,"
        ",,,,,,,512,full,3300,\n",
    ]
    return CSV_HEADER + "".join(rows)


class OneCsvReaderTest(unittest.TestCase):
    """The same CSV through the CLI and through Python stores the same runs: both send the file's
    bytes to the server's one reader (ImportMeasurements)."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.cli = os.environ.get("SCALECAST_CLI_BIN", "")
        if not cls.cli or not os.access(cls.cli, os.X_OK):
            raise unittest.SkipTest("SCALECAST_CLI_BIN is not an executable scalecast CLI")
        cls.server = ServerProcess()
        cls.client = Client(cls.server.address, timeout=60)
        cls.dir = tempfile.TemporaryDirectory(prefix="scalecast-csv-")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.dir.cleanup()
        assert cls.server.stop() == 0

    def write(self, name: str, text: str) -> str:
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def cli_import(self, path: str) -> subprocess.CompletedProcess:
        return subprocess.run([self.cli, "--server", self.server.address, "measurements", "import",
                               path], capture_output=True, text=True, timeout=60)

    def raw_stored(self) -> dict[str, tuple]:
        """Stored runs by csv_id: the scenario's bytes, source, measured values and labels."""
        resp = self.client._stub.ListMeasurements(pb.ListMeasurementsRequest(page_size=1000),
                                                  timeout=60)
        self.assertEqual(resp.next_page_token, "")
        return {m.labels["csv_id"]: (m.scenario.SerializeToString(deterministic=True), m.source,
                                     m.tokens_per_s_per_gpu, dict(m.labels))
                for m in resp.measurements}

    def delete_all(self) -> None:
        for m in list(self.client.list_measurements(page_size=1000)):
            self.client.delete_measurement(m.id)

    def test_cli_and_python_store_identical_runs(self) -> None:
        path = self.write("edges.csv", edge_csv())
        rows = len(FRAMEWORKS) + 3
        self.delete_all()
        done = self.cli_import(path)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn(f"Recorded {rows} measurements", done.stdout)
        by_cli = self.raw_stored()
        self.assertEqual(len(by_cli), rows)
        # The same runs again through Python: every one is a duplicate of the CLI's.
        self.assertEqual(self.client.import_csv(path), [])
        self.assertEqual(self.client.count_measurements(), rows)
        self.delete_all()
        self.assertEqual(len(self.client.import_csv(path)), rows)
        by_python = self.raw_stored()
        self.assertEqual(by_python, by_cli)
        again = self.cli_import(path)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn(f"{rows} duplicates skipped", again.stdout)

        # The server's conventions, seen from the stored runs.
        stored = {m.labels["csv_id"]: m for m in self.client.list_measurements(page_size=1000)}
        self.assertEqual({stored[f"f{i}"].scenario["framework"] for i in range(len(FRAMEWORKS))},
                         set(FRAMEWORKS))
        resp = self.client._stub.ListMeasurements(pb.ListMeasurementsRequest(page_size=1000),
                                                  timeout=60)
        raw = {m.labels["csv_id"]: m.scenario for m in resp.measurements}
        sharding = {fw: raw[f"f{i}"].parallelism.sharding for i, fw in enumerate(FRAMEWORKS)}
        # Each framework's default (model/framework.cc); DeepSpeed's ZeRO stage is its config's.
        self.assertEqual(sharding, {
            "megatron": pb.SHARDING_ZERO1, "nemo": pb.SHARDING_ZERO1,
            "megatron-deepspeed": pb.SHARDING_ZERO1, "torchtitan": pb.SHARDING_FSDP,
            "composer-fsdp": pb.SHARDING_FSDP, "fms-fsdp": pb.SHARDING_HSDP,
            "deepspeed": pb.SHARDING_UNSPECIFIED, "maxtext": pb.SHARDING_FSDP,
            "paxml": pb.SHARDING_FSDP})
        for i in range(len(FRAMEWORKS)):  # left to the framework, not decided by the reader
            self.assertFalse(raw[f"f{i}"].parallelism.HasField("sequence_parallel"))
        pp = raw["pp"]
        self.assertEqual(pp.workload.global_batch, 8 * 2 * 4)  # dp * mb * pp
        self.assertEqual(set(pp.parallelism.recompute_modules), {"layernorm", "mlp"})
        self.assertEqual(stored["pp"].labels["note"], 'a "quoted" note, with comma')
        self.assertEqual(raw["hsdp"].parallelism.shard_group, 8)  # within a node (8 if blank)
        self.assertEqual(raw["open"].parallelism.dp, 0)  # left to the planner

    def test_bad_rows_name_line_and_column_through_both_clients(self) -> None:
        good = ("x,src,megatron,m,32,4096,32,,11008,gated,32000,4096,h100-sxm-80gb,64,8,bf16,"
                "2,4,,,8,,2,,,3000,\n")
        cases = [
            (good.replace("gated", "swiglu"), "line 3, column mlp"),
            (good.replace(",3000,", ",-5,"), "line 3, column tokens_per_s_per_gpu"),
            (good.replace(",bf16,", ",bf17,"), "line 3, column precision"),
            (good.replace("megatron", "jaxformer"), "line 3, column framework"),
            (good.replace(",32,4096,32,", ",x,4096,32,"), "line 3, column layers"),
            (good.replace(",2,4,,,8,", ",2,4,,,,"), "line 3, column global_batch"),
            (good.replace(",3000,", ",3e9,"), "line 3: tokens_per_s_per_gpu"),
            (good.replace("h100-sxm-80gb", "h900"), "line 3: scenario.cluster.accelerator"),
        ]
        self.delete_all()
        for i, (bad, where) in enumerate(cases):
            path = self.write(f"bad{i}.csv", CSV_HEADER + good + bad)
            with self.assertRaises(ScalecastError) as cm:
                self.client.import_csv(path)
            self.assertEqual(cm.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn(where, cm.exception.message)
            done = self.cli_import(path)
            self.assertEqual(done.returncode, 2, done.stderr)
            self.assertIn(f"error: {path}: {cm.exception.message}\nnothing was recorded", done.stderr)
        self.assertEqual(self.client.count_measurements(), 0)


class MeasurementTest(ClientTestCase):
    ids: list[str]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        path = _with_releases(CALIBRATION_CSV)
        try:
            cls.ids = cls.client.import_csv(path)
        finally:
            os.unlink(path)

    def test_import_recorded_every_row(self) -> None:
        self.assertEqual(len(self.ids), 280)
        self.assertEqual(len(set(self.ids)), 280)
        self.assertEqual(self.client.count_measurements(labels={"csv_id": "1"}), 1)

    def test_list_iterates_pages(self) -> None:
        listed = list(self.client.list_measurements(page_size=64))
        self.assertEqual(len(listed), 280)
        self.assertEqual({m.id for m in listed}, set(self.ids))
        titan = list(self.client.list_measurements(framework="torchtitan", page_size=10))
        self.assertEqual(len(titan), 43)
        m = next(iter(self.client.list_measurements(labels={"csv_id": "1"})))
        self.assertEqual(m.scenario["model"], "MPT-70b")
        self.assertEqual(m.scenario["gpus"], 512)
        self.assertEqual(m.tokens_per_s_per_gpu, 1007)
        self.assertIsNotNone(m.recorded_at)

    def test_validate_on_the_calibration_set(self) -> None:
        v = self.client.validate(include_rows=True)
        self.assertEqual(v.overall.count, 280)
        self.assertLess(v.overall.mape, 0.10)
        self.assertLessEqual(v.overall.median_ape, v.overall.mape)
        self.assertEqual(v.failed_count, 0)
        self.assertEqual(len(v.rows), 280)
        self.assertEqual(sum(e.count for e in v.by_framework.values()), 280)
        self.assertEqual(v.by_framework["composer-fsdp"].count, 216)
        row = v.rows[0]
        self.assertAlmostEqual(row.error, row.predicted_tokens_per_s_per_gpu
                               / row.measured_tokens_per_s_per_gpu - 1, places=9)
        h100 = self.client.validate(accelerator="h100-sxm-80gb")
        self.assertEqual(h100.overall.count, v.by_accelerator["h100-sxm-80gb"].count)

    def test_validate_per_source_and_label(self) -> None:
        v = self.client.validate(include_rows=True)
        # Every run has a source: the source groups partition the runs.
        self.assertEqual(sum(e.count for e in v.by_source.values()), 280)
        self.assertEqual(v.by_source_omitted_count, 0)
        self.assertEqual(len(v.by_source), 15)
        first = next(iter(v.by_source))  # most runs first
        self.assertEqual(first, "MosaicML llm-foundry MPT training benchmarks")
        self.assertEqual(v.by_source[first].count, 216)
        # Each source's MAPE is the mean |error| of its rows.
        source_of = {m.id: m.source for m in self.client.list_measurements(page_size=500)}
        errors: dict[str, list[float]] = {}
        for r in v.rows:
            errors.setdefault(source_of[r.measurement_id], []).append(abs(r.error))
        for name, stats in v.by_source.items():
            self.assertEqual(stats.count, len(errors[name]), name)
            self.assertAlmostEqual(stats.mape, sum(errors[name]) / len(errors[name]), places=9)
        # Labels: "key=value"; 280 csv_id labels and the notes, capped at the 100 largest.
        self.assertEqual(len(v.by_label), 100)
        self.assertGreater(v.by_label_omitted_count, 180)
        counts = [e.count for e in v.by_label.values()]
        self.assertEqual(counts, sorted(counts, reverse=True))
        self.assertEqual(v.by_label["csv_id=1"].count, 1)
        one = next(r for r in v.rows if r.measurement_id in
                   {m.id for m in self.client.list_measurements(labels={"csv_id": "1"})})
        self.assertAlmostEqual(v.by_label["csv_id=1"].mape, abs(one.error), places=9)

    def test_calibrate_a_profile_and_use_it(self) -> None:
        cal = self.client.calibrate("py-test", framework="composer-fsdp")
        self.assertEqual(cal.profile.name, "py-test")
        self.assertEqual(cal.profile.fitted_count, 216)
        self.assertTrue(cal.profile.parameters)
        self.assertLessEqual(cal.after.mape, cal.before.mape + 1e-9)
        # A layer over the built-in default: only what it changed, each with the runs behind it,
        # and the error on the other stored runs before and after.
        self.assertTrue(cal.accepted, cal.reason)
        self.assertTrue(cal.profile.changes)
        for change in cal.profile.changes:
            self.assertIsInstance(change, scalecast.ParameterChange)
            self.assertNotEqual(change.old_value, change.new_value, change.key)
            self.assertGreater(change.runs, 0, change.key)
        self.assertIsNotNone(cal.others_before)
        self.assertEqual(cal.others_before.count, cal.others_after.count)
        p = self.client.predict(gpus=512, calibration="py-test", **LLAMA70)
        self.assertEqual(p.calibration, "py-test")

    def test_record_list_delete_a_dict(self) -> None:
        ids = self.client.record_measurements([dict(
            model="llama3-8b", accelerator="h100-sxm-80gb", gpus=8, seq_len=8192, global_batch=16,
            tp=1, pp=1, cp=1, dp=8, sharding="fsdp", framework="torchtitan",
            tokens_per_s_per_gpu=7000.0, watts_per_gpu=650, source="py-test",
            labels={"run": "py-1"})])
        try:
            self.assertEqual(len(ids), 1)
            got = list(self.client.list_measurements(labels={"run": "py-1"}))
            self.assertEqual([m.id for m in got], ids)
            self.assertEqual(got[0].watts_per_gpu, 650)
            self.assertEqual(got[0].scenario["sharding"], "fsdp")
            # A Measurement read back can be recorded again: the same run, a duplicate, is not
            # stored twice.
            again = self.client.record_measurements(got)
            self.assertEqual(again, [])
            # All or nothing: a bad item fails the batch, nothing is stored.
            with self.assertRaises(ScalecastError) as cm:
                self.client.record_measurements([got[0], dict(got[0].scenario, tokens_per_s_per_gpu=-1)])
            self.assertEqual(cm.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
            self.assertEqual(self.client.count_measurements(source="py-test"), 1)
        finally:
            self.client.delete_measurement(ids[0])
        self.assertEqual(self.client.count_measurements(), 280)
        with self.assertRaises(ScalecastError) as cm:
            self.client.delete_measurement(ids[0])
        self.assertEqual(cm.exception.code, grpc.StatusCode.NOT_FOUND)


class AuthAndShutdownTest(unittest.TestCase):
    def test_token_guards_writes_and_sigterm_exits_zero(self) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".token", delete=False) as f:
            f.write("s3cret\n")
        try:
            server = ServerProcess("--auth-token-file", f.name)
            try:
                m = dict(LLAMA70, gpus=64, tokens_per_s_per_gpu=900.0)
                with Client(server.address) as anon:
                    self.assertGreater(anon.predict(gpus=64, **LLAMA70).tokens_per_s, 0)  # reads are open
                    with self.assertRaises(ScalecastError) as cm:
                        anon.record_measurements([m])
                    self.assertEqual(cm.exception.code, grpc.StatusCode.UNAUTHENTICATED)
                with Client(server.address, token="wrong") as bad:
                    with self.assertRaises(ScalecastError) as cm:
                        bad.record_measurements([m])
                    self.assertEqual(cm.exception.code, grpc.StatusCode.UNAUTHENTICATED)
                with Client(server.address, token="s3cret") as ok:
                    self.assertEqual(len(ok.record_measurements([m])), 1)
            finally:
                self.assertEqual(server.stop(), 0)
        finally:
            os.unlink(f.name)


class ProfilesTest(unittest.TestCase):
    """list_profiles, delete_profile and calibrate(replace=) on a server with a write token."""

    def test_list_delete_and_replace_with_the_token_enforced(self) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".token", delete=False) as f:
            f.write("s3cret\n")
        try:
            server = ServerProcess("--auth-token-file", f.name)
            try:
                with Client(server.address, token="s3cret") as ok, \
                        Client(server.address) as anon, \
                        Client(server.address, token="wrong") as bad:
                    self._check(ok, anon, bad)
            finally:
                self.assertEqual(server.stop(), 0)
        finally:
            os.unlink(f.name)

    def _check(self, ok: Client, anon: Client, bad: Client) -> None:
        self.assertEqual(len(ok.import_csv(CALIBRATION_CSV)), 280)
        self.assertEqual(anon.list_profiles(), [])
        for c in (anon, bad):  # calibrate is a write
            with self.assertRaises(ScalecastError) as cm:
                c.calibrate("a100-40", accelerator="a100-sxm-40gb")
            self.assertEqual(cm.exception.code, grpc.StatusCode.UNAUTHENTICATED)
        first = ok.calibrate("a100-40", accelerator="a100-sxm-40gb")
        self.assertEqual(first.profile.fitted_count, 78)
        # The name is taken: ALREADY_EXISTS unless replace=True.
        with self.assertRaises(ScalecastError) as cm:
            ok.calibrate("a100-40", accelerator="a100-sxm-40gb")
        self.assertEqual(cm.exception.code, grpc.StatusCode.ALREADY_EXISTS)
        again = ok.calibrate("a100-40", framework="composer-fsdp", replace=True)
        self.assertEqual(again.profile.fitted_count, 216)
        ok.calibrate("h100", accelerator="h100-sxm-80gb")
        # Listing is a read: open without the token; by name; the replacement is what is stored.
        listed = anon.list_profiles()
        self.assertEqual([p.name for p in listed], ["a100-40", "h100"])
        a100 = listed[0]
        self.assertIsInstance(a100, scalecast.CalibrationProfile)
        self.assertEqual(a100.fitted_count, 216)
        self.assertEqual(a100.parameters, again.profile.parameters)
        self.assertAlmostEqual(a100.mape_after, again.after.mape, places=9)
        self.assertAlmostEqual(a100.mape_before, again.before.mape, places=9)
        self.assertIsNotNone(a100.created_at)
        # Deleting is a write.
        for c in (anon, bad):
            with self.assertRaises(ScalecastError) as cm:
                c.delete_profile("a100-40")
            self.assertEqual(cm.exception.code, grpc.StatusCode.UNAUTHENTICATED)
        self.assertEqual(len(ok.list_profiles()), 2)
        ok.delete_profile("a100-40")
        self.assertEqual([p.name for p in ok.list_profiles()], ["h100"])
        with self.assertRaises(ScalecastError) as cm:
            ok.delete_profile("a100-40")
        self.assertEqual(cm.exception.code, grpc.StatusCode.NOT_FOUND)
        self.assertIn("a100-40", cm.exception.message)
        # A deleted profile can no longer be predicted with.
        with self.assertRaises(ScalecastError) as cm:
            ok.predict(gpus=64, calibration="a100-40", **LLAMA70)
        self.assertEqual(cm.exception.code, grpc.StatusCode.NOT_FOUND)


class PlanTest(ClientTestCase):
    PRICES = {"h100-sxm-80gb": 2.5, "a100-sxm-80gb": 1.5}

    def test_plan_takes_a_described_part_and_the_headroom(self) -> None:
        spec = {"id": "h100-fast-net", "inter_node_gbps_per_gpu": 1600}
        p = self.client.plan(1e12, [{"accelerator": "h100-sxm-80gb", "price_per_gpu_hour": 2,
                                     "accelerator_spec": spec}, "h100-sxm-80gb"],
                             gpu_counts=[64], model="llama2-13b", seq_len=4096, global_batch=512,
                             hbm_headroom=0.2)
        self.assertEqual(sorted(o.accelerator for o in p.options),
                         ["h100-fast-net", "h100-sxm-80gb"])
        for o in p.options:
            self.assertLessEqual(o.prediction.memory.total_bytes,
                                 0.8 * o.prediction.memory.capacity_bytes)
        self.assertFalse(any(w.startswith("hbm_headroom:") for w in p.warnings), p.warnings)
        # The scenario's network keywords reach each candidate; a candidate's own keys win.
        p = self.client.plan(1e12, ["h100-sxm-80gb",
                                    {"accelerator": "a100-sxm-80gb", "inter_node_latency_us": 40}],
                             gpu_counts=[64], model="llama2-13b", seq_len=4096, global_batch=512,
                             network_latency_us=500)
        latency = {o.accelerator: o.prediction.scenario["network_latency_us"] for o in p.options}
        self.assertEqual(latency, {"h100-sxm-80gb": 500, "a100-sxm-80gb": 40})
        with self.assertRaises(ScalecastError) as e:
            self.client.plan(1e12, [{"accelerator": "h100-sxm-80gb",
                                     "accelerator_spec": {"hbm_gb": -1}}],
                             gpu_counts=[64], model="llama2-13b", seq_len=4096)
        self.assertIn("candidates[0].accelerator_spec.hbm_gb", e.exception.message)

    def test_plan_arithmetic_and_flags(self) -> None:
        progress: list[PlanProgress] = []
        p = self.client.plan(1e12, self.PRICES, gpu_counts=[16, 64, 256], model="llama2-7b",
                             seq_len=4096, deadline_days=20, electricity_price_per_kwh=0.1,
                             pue=1.2, progress=progress.append)
        self.assertIsInstance(p, Plan)
        self.assertTrue(p.ranked_by_cost)
        self.assertEqual(len(p.options), 6)  # top_k 0: every count of every accelerator
        self.assertGreater(len(progress), 0)
        self.assertEqual(progress[-1].evaluated_count, progress[-1].total_count)
        for o in p.options:
            self.assertIsInstance(o, PlanOption)
            self.assertAlmostEqual(o.gpu_hours, o.days * 24 * o.gpus, delta=1e-6 * o.gpu_hours)
            self.assertAlmostEqual(
                o.cost, o.gpu_hours * self.PRICES[o.accelerator] + o.energy_mwh * 1000 * 0.1,
                delta=1e-6 * o.cost)
            self.assertAlmostEqual(o.days, 1e12 / o.prediction.tokens_per_s / o.goodput / 86400,
                                   delta=1e-6 * o.days)
            self.assertEqual(o.prediction.layout.gpus, o.gpus)
            self.assertEqual(o.meets_constraints, o.days <= 20)
            self.assertEqual(o.global_batch, o.prediction.scenario["global_batch"])
        # Goodput falls with the GPU count.
        h100 = sorted((o for o in p.options if o.accelerator == "h100-sxm-80gb"),
                      key=lambda o: o.gpus)
        self.assertEqual([o.gpus for o in h100], [16, 64, 256])
        self.assertGreater(h100[0].goodput, h100[1].goodput)
        self.assertGreater(h100[1].goodput, h100[2].goodput)
        # Ranked: meeting the constraints first, then by cost.
        keys = [(not o.meets_constraints, o.cost) for o in p.options]
        self.assertEqual(keys, sorted(keys))
        # The smallest cluster meeting the deadline, and the Pareto front.
        s = p.smallest("h100-sxm-80gb")
        if s is not None:
            self.assertTrue(s.meets_constraints)
            self.assertTrue(all(not o.meets_constraints for o in h100 if o.gpus < s.gpus))
        front = p.pareto
        self.assertGreater(len(front), 0)
        for a, b in zip(front, front[1:]):
            self.assertLess(a.days, b.days)
            self.assertGreater(a.cost, b.cost)
        self.assertEqual({(d.from_gpus, d.to_gpus) for d in p.doublings}, set())  # 16->64 is 4x
        text = " ".join(p.warnings)
        for field in ("interruptions_per_1000_gpu_days", "restart_s", "checkpoint_write_gbps",
                      "checkpoint_interval_s", "constraints.max_global_batch_tokens"):
            self.assertIn(field, text)

    def test_plan_top_k_and_reliability(self) -> None:
        p = self.client.plan(1e12, ["h100-sxm-80gb"], gpu_counts=[8, 16, 32, 64],
                             model="llama2-7b", seq_len=4096, global_batch=512, top_k=1,
                             reliability={"interruptions_per_1000_gpu_days": 5, "restart_s": 60,
                                          "checkpoint_interval_s": 1800})
        self.assertFalse(p.ranked_by_cost)  # no price: GPU-hours rank
        self.assertEqual(sum(o.top for o in p.options), 1)
        for o in p.options:
            self.assertEqual(o.global_batch, 512)
            self.assertAlmostEqual(o.mtbf_s, 86400 / (5 / 1000 * o.gpus))
            self.assertEqual(o.checkpoint_interval_s, 1800)
        self.assertNotIn("reliability.restart_s", " ".join(p.warnings))
        for d in p.doublings:
            self.assertEqual(d.to_gpus, 2 * d.from_gpus)

    def test_plan_errors_name_the_field(self) -> None:
        for kwargs, path in (
                (dict(tokens=0), "tokens: "),
                (dict(candidates=["no-such-gpu"]), "candidates[0].accelerator: "),
                (dict(pue=0.5), "pue: "),
                (dict(tp=3), "candidates[0].layout.tp"),
                (dict(reliability={"restart_s": -1}), "reliability.restart_s: ")):
            args = dict(tokens=1e12, candidates=["h100-sxm-80gb"], gpu_counts=[64],
                        model="llama2-7b", seq_len=4096)
            args.update(kwargs)
            with self.assertRaises(ScalecastError) as cm:
                self.client.plan(**args)
            self.assertIn(cm.exception.code,
                          (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND))
            self.assertTrue(cm.exception.message.startswith(path), cm.exception.message)
        with self.assertRaises(TypeError):
            self.client.plan(1e12, ["h100-sxm-80gb"], reliability={"mtbf": 1}, model="llama2-7b",
                             seq_len=4096)


class PlanClusterExampleTest(ClientTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.example = load_example()

    def test_plan_answers_the_question(self) -> None:
        ex = self.example
        p30 = ex.plan(self.client, 2e12, 30, max_gpus=2048)
        p60 = ex.plan(self.client, 2e12, 60, max_gpus=2048)
        self.assertEqual({o.accelerator for o in p30.options}, set(ex.DEFAULT_ACCELERATORS))
        s30, s60 = p30.smallest(), p60.smallest()
        self.assertIsNotNone(s30)
        assert s30 is not None and s60 is not None
        self.assertLessEqual(s30.days, 30)
        # A longer deadline never needs a larger cluster.
        self.assertLessEqual(s60.gpus, s30.gpus)
        text = ex.format_plan(p30, 2e12, 30, "llama2-70b")
        self.assertIn("Smallest cluster meeting 30 days: ", text)
        self.assertIn("Pareto front", text)
        p1 = ex.plan(self.client, 2e12, 1, max_gpus=512)
        self.assertIsNone(p1.smallest())
        self.assertIn("No GPU count meets 1 days", ex.format_plan(p1, 2e12, 1, "llama2-70b"))

    def test_script_is_executable(self) -> None:
        self.assertTrue(os.access(EXAMPLE, os.X_OK), EXAMPLE)
        with open(EXAMPLE) as f:
            self.assertEqual(f.readline().strip(), "#!/usr/bin/python3")

    def test_script_runs(self) -> None:
        assert SERVER is not None
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [PKG_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        out = subprocess.run(
            [sys.executable, EXAMPLE, "--server", SERVER.address, "--max-gpus", "1024",
             "--tokens", "1e12", "--days", "30"],
            capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        text = out.stdout
        self.assertIn("Training llama2-70b on 1e+12 tokens within 30 days", text)
        self.assertRegex(text, r"\nh100-sxm-80gb +1024 ")
        self.assertIn("Assumptions:", text)
        self.assertIn("Doubling past it", text)


if __name__ == "__main__":
    unittest.main()
