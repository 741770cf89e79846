#!/usr/bin/python3
"""Predict measured training throughput with the peer tool llm-analysis.

llm-analysis (github.com/cli99/llm-analysis) is a first-order latency model of
transformer training. This script feeds it the runs of our measurement CSVs and
writes its prediction of tokens/s per GPU, so that scalecast can be compared
with it on the runs it can express. Run it with Debian's Python (the peer
needs `fire`, package python3-fire):

    /usr/bin/python3 bench/peers/llm_analysis_peer.py \\
        --peer-src /tmp/peers/src/llm-analysis --out /tmp/peers/llm_analysis.csv \\
        ../shared/data/calibration.csv data/megatron-2021.csv ...

Output columns: id, expressible, reason, peer_tokens_per_s_per_gpu, peer_step_s.
`expressible` is `yes`, `yes-approx` (run with a fact the peer has no input
for, named in `reason`), `no` (not run; `reason` says why) or `error` (the peer
raised; `reason` holds the message). `reason` on `yes` rows notes inputs that
were defaulted or assumed.

How a run is put to the peer (its entry `llm_analysis.analysis.train`):
- flops_efficiency 0.5, hbm_memory_efficiency 0.9, all else at the peer's
  defaults unless the run states it.
- Model: a ModelConfig (the peer's own format) with layers, heads, kv heads
  (GQA), hidden, ffn, vocab, max_seq_len = seq_len and
  mlp_gated_linear_units for gated MLPs.
- GPU: the peer's shipped gpu_configs, mapped by exact name and memory size.
- Layout: tp, pp, dp_size = dp, total_num_gpus = num_gpus (as the authors'
  examples do; the peer's replicated dp is then 1), sp_size = tp unless the run
  says sequence_parallel false. hsdp: dp_size = the shard group (assumed to be
  one node, gpus_per_node / (tp*pp)), the rest replicated (the peer's rdp_size).
- ds_zero: fsdp/hsdp 3, zero2 2, zero1 and blank (Megatron's distributed
  optimizer) 1, ddp 0.
- activation_recomputation: full 4 (FULL), selective 1 (ATTN_COMPUTE, the
  Korthikanti et al. selective scheme), none or blank 0 (the peer's default).
- Batch: batch_size_per_gpu = micro_batch, global_batch_size = global_batch.
  A blank global batch becomes micro_batch * dp; a blank micro-batch is left
  to the peer, which picks the largest that fits memory.
- vpp > 1: the peer has no interleaving input (it models no pipeline bubble at
  all), so such runs are run without it and marked yes-approx.
- The peer does not refuse runs that overflow memory: it only logs warnings
  and predicts anyway. It does assert on some runs (tp > gpus per node; its
  FLOP self-check for multi-head attention, which assumes a plain 4h MLP):
  those rows are `error`.

Step time: `training()` returns `latency_per_iter` = latency_per_micro_batch *
gradient_accumulation_steps + latency_weight_update, the time of one optimizer
step (`total_training_latency` is only that times a number of steps, and the
peer's own `device_tokens_per_sec` leaves out the accumulation steps, so
neither is used). Tokens/s per GPU = global_batch * seq_len / latency_per_iter
/ num_gpus.
"""

import argparse
import sys
import traceback

from runs import field, integer, read_runs, scope_refusals, write_predictions

FLOPS_EFFICIENCY = 0.5
HBM_MEMORY_EFFICIENCY = 0.9

# Our accelerator names -> the peer's gpu_configs (same part, same memory).
GPU_NAMES = {
    "a100-sxm-40gb": "a100-sxm-40gb",
    "a100-sxm-80gb": "a100-sxm-80gb",
    "h100-sxm-80gb": "h100-sxm-80gb",
    "mi250x-128gb": "mi250x-128gb",
}
DTYPE_NAMES = {"bf16": "w16a16e16", "fp16": "w16a16e16"}  # the scope's 16-bit precisions
DS_ZERO = {"fsdp": 3, "hsdp": 3, "zero2": 2, "zero1": 1, "": 1, "ddp": 0}
RECOMPUTE = {"full": 4, "selective": 1, "none": 0, "": 0}


def refusals(row):
    """Why the peer cannot express a run (the comparison's scope, then the peer's own inputs);
    empty when it can."""
    why = scope_refusals(row)
    if field(row, "accelerator") not in GPU_NAMES:
        why.append(f"accelerator {field(row, 'accelerator')} has no peer gpu config")
    if field(row, "recompute") not in RECOMPUTE:
        why.append(f"recompute '{field(row, 'recompute')}' has no peer equivalent")
    if field(row, "sharding") not in DS_ZERO:
        why.append(f"sharding '{field(row, 'sharding')}' has no peer equivalent")
    return why


def model_config(peer, row):
    """The run's model shape as the peer's ModelConfig."""
    return peer.config.ModelConfig(
        name=f"scalecast-run-{field(row, 'id')}",
        num_layers=integer(row, "layers"),
        n_head=integer(row, "heads"),
        hidden_dim=integer(row, "hidden"),
        vocab_size=integer(row, "vocab"),
        max_seq_len=integer(row, "seq_len"),
        num_key_value_heads=integer(row, "kv_heads"),
        ffn_embed_dim=integer(row, "ffn_hidden"),
        mlp_gated_linear_units=field(row, "mlp") == "gated",
    )


def data_parallel(row, notes):
    """(sharded dp_size for the peer, ds_zero stage)."""
    sharding = field(row, "sharding")
    dp = integer(row, "dp")
    if sharding == "hsdp":
        per_node = integer(row, "gpus_per_node") or 8
        shard = max(1, min(dp, per_node // (integer(row, "tp") * integer(row, "pp"))))
        notes.append(f"hsdp: shard group {shard} (one node) assumed, rest replicated")
        return shard, DS_ZERO[sharding]
    if sharding == "":
        notes.append("sharding blank: ZeRO-1 (distributed optimizer)")
    return dp, DS_ZERO[sharding]


def batches(row, notes):
    """(micro-batch, global batch) for the peer; None leaves it to the peer."""
    micro, global_batch = integer(row, "micro_batch"), integer(row, "global_batch")
    if global_batch is None and micro is not None:
        global_batch = micro * integer(row, "dp")
        notes.append("global_batch blank: micro_batch*dp (one micro-batch a step)")
    if micro is None:
        notes.append("micro_batch blank: chosen by the peer (largest that fits)")
    return micro, global_batch


def train_args(peer, row, notes):
    """Keyword arguments of llm_analysis.analysis.train for one run."""
    name = f"scalecast-run-{field(row, 'id')}"
    peer.config.model_configs[name] = model_config(peer, row)
    dp_size, ds_zero = data_parallel(row, notes)
    micro, global_batch = batches(row, notes)
    recompute = field(row, "recompute")
    if recompute == "":
        notes.append("recompute blank: none (peer default)")
    tp = integer(row, "tp")
    sp = 1 if field(row, "sequence_parallel") == "false" else tp
    return dict(
        model_name=name,
        gpu_name=GPU_NAMES[field(row, "accelerator")],
        dtype_name=DTYPE_NAMES[field(row, "precision")],
        log_level="ERROR",
        batch_size_per_gpu=micro,
        global_batch_size=global_batch,
        seq_len=integer(row, "seq_len"),
        activation_recomputation=RECOMPUTE[recompute],
        ds_zero=ds_zero,
        dp_size=dp_size,
        tp_size=tp,
        pp_size=integer(row, "pp"),
        sp_size=sp,
        total_num_gpus=integer(row, "num_gpus"),
        flops_efficiency=FLOPS_EFFICIENCY,
        hbm_memory_efficiency=HBM_MEMORY_EFFICIENCY,
        num_gpus_per_node=integer(row, "gpus_per_node") or 8,
    )


def error_text(e):
    """The peer's exception with the function that raised it (its asserts are often bare)."""
    frame = traceback.extract_tb(e.__traceback__)[-1]
    message = str(e).replace("\n", " ") or "(no message)"
    return f"peer raised {type(e).__name__} in {frame.name}: {message}"


def predict(peer, row):
    """One output row for one run."""
    out = {"id": field(row, "id"), "expressible": "no", "reason": "",
           "peer_tokens_per_s_per_gpu": "", "peer_step_s": ""}
    why = refusals(row)
    if why:
        out["reason"] = "; ".join(why)
        return out
    notes = []
    if (integer(row, "vpp") or 1) > 1:
        out["expressible"] = "yes-approx"
        notes.insert(0, "vpp>1: peer has no interleaved-pipeline input (nor a bubble)")
    else:
        out["expressible"] = "yes"
    try:
        summary = peer.analysis.train(**train_args(peer, row, notes))
    except Exception as e:  # the peer asserts on inputs it rejects
        out["expressible"] = "error"
        notes.append(error_text(e))
        out["reason"] = "; ".join(notes)
        return out
    step_s = summary["latency_per_iter"]
    tokens = summary["global_batch_size"] * integer(row, "seq_len")
    out["peer_step_s"] = f"{step_s:.6g}"
    out["peer_tokens_per_s_per_gpu"] = f"{tokens / step_s / integer(row, 'num_gpus'):.6g}"
    out["reason"] = "; ".join(notes)
    return out


def load_peer(src):
    """Import llm-analysis from its source tree."""
    sys.path.insert(0, src)
    import llm_analysis.analysis
    import llm_analysis.config

    class Peer:
        analysis = llm_analysis.analysis
        config = llm_analysis.config

    return Peer


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv", nargs="+", help="measured-run CSV files")
    parser.add_argument("--peer-src", required=True, help="extracted llm-analysis tree")
    parser.add_argument("--out", required=True, help="output CSV")
    args = parser.parse_args()
    peer = load_peer(args.peer_src)
    write_predictions(args.out, [predict(peer, row) for row in read_runs(args.csv)])


if __name__ == "__main__":
    main()
