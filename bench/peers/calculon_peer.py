#!/usr/bin/python3
"""Predict measured LLM training throughput with the peer tool Calculon.

Calculon (github.com/calculon-ai/calculon, Isaev et al., SC23) is run
in-process through its own classes (Llm, Llm.Application, Llm.Execution,
System) on every row of the measured-run CSVs given on the command line, and
one CSV is written with the columns

    id,expressible,reason,peer_tokens_per_s_per_gpu,peer_step_s

expressible is yes (predicted; reason lists any assumption), no (reason says
which run fact Calculon cannot express) or error (Calculon refused the row).
Run it with Debian's Python (Calculon imports numpy, pandas and psutil:
apt-get install python3-numpy python3-pandas python3-psutil):

    /usr/bin/python3 bench/peers/calculon_peer.py \\
        --peer-src /tmp/peers/src/calculon --out /tmp/peers/calculon.csv \\
        FILE.csv [FILE.csv ...]

The measured throughput column is never read.

Mapping of a row to Calculon's inputs
-------------------------------------
* System: the authors' shipped files, unchanged except where noted:
  a100-sxm-80gb -> systems/a100_80g.json, h100-sxm-80gb ->
  systems/h100_80g_nvl8.json, a100-sxm-40gb -> systems/a100_80g.json with
  mem1 capacity 40 GiB and mem1 bandwidth 1555 GB/s (A100-40GB datasheet).
  The NVLink tier (network 0) gets the row's gpus_per_node as its size
  (the files ship 8). No other accelerator has a shipped system
  (a100_80e.json is the same A100 with unlimited memory, for validation).
* Application: hidden, feedforward = ffn_hidden, seq_size = seq_len,
  attn_heads = heads, attn_size = hidden / heads, num_blocks = layers.
  attention_type 'multiquery' when kv_heads == 1, else 'multihead'.
* Execution: the row's tp, pp, dp, vpp (pipeline_interleaving, 1 if blank),
  global_batch (blank: micro_batch * dp), micro_batch (blank: 1, noted).
  activation_recompute: full -> 'full', selective (Megatron's default
  core-attention modules) -> 'attn_only', none or blank -> 'none'.
  Sequence parallelism (tensor_par_comm_type 'rs_ag', else 'ar'): from a
  sequence_parallel column when set, else from an explicit statement in the
  row's note ('no sequence parallelism', 'sequence_parallel True/False'),
  else on for tp > 1 in megatron / nemo / megatron-deepspeed rows unless
  their framework_version is dated before 2022.06 (Megatron's sequence
  parallelism, arXiv 2205.05198, appeared in mid-2022).
  seq_par_ag_redo = Llm.can_redo_ag(...) (Megatron re-gathers the
  sequence-parallel input in backward unless full recompute), as in the
  authors' seqsel validation files.
  tensor_par_overlap 'ring' when a tp_comm_overlap column is true (TE's
  ring-exchange overlap), else 'none'; data_par_overlap from a dp_overlap
  column, else false.
  optimizer_sharding for zero1 / zero2 and for blank sharding in
  Megatron-family rows (distributed optimizer), only when dp > 1 (Calculon
  asserts it).
  datatype 'float16' for both bf16 and fp16: the shipped systems define
  only 'float16' (same 2-byte width and peak as bf16).
  Remaining options as in the authors' Megatron validation,
  validation/seqsel/tab5/*.json: fused_activation false, no offloads,
  training true.
  Networks: tensor parallelism on NVLink (net 0) when tp fits a node, data
  parallelism there when tp*dp fits, pipeline parallelism when tp*dp*pp fits
  (Megatron's rank order tp, dp, pp); otherwise the inter-node net 1, as in
  the validation files (tensor_par_net 0, pipeline/data_par_net 1).
* Time: Llm.get_total_time() is the time of one batch (Llm.get_sample_rate
  divides global_batch by it). When the memory check fails (it is raised
  after all times are computed) the time is still reported and noted.
  tokens/s/GPU = global_batch * seq_len / total_time / num_gpus.

Not expressible: MoE rows, precisions other than bf16/fp16, context
parallelism, blank layouts, accelerators without a shipped system, gated
(SwiGLU) MLPs (Calculon builds a 2-matrix GeLU MLP), grouped-query attention
(Calculon has multihead and multiquery only), multi-head latent attention,
FSDP / HSDP (Calculon shards optimizer state and gradients, never
parameters), selective recompute of modules other than core attention.
"""

import argparse
import copy
import json
import logging
import os
import re
import sys

from runs import OUT_COLUMNS, integer as num, read_runs, scope_refusals, truthy, write_predictions

MEGATRON_FAMILY = {'megatron', 'nemo', 'megatron-deepspeed'}
# Megatron's sequence parallelism (Korthikanti et al., arXiv 2205.05198,
# May 2022) is taken as absent from framework versions dated before 2022.06.
SP_RELEASE = (2022, 6)
SYSTEM_FILES = {
    'a100-sxm-80gb': 'a100_80g.json',
    'a100-sxm-40gb': 'a100_80g.json',
    'h100-sxm-80gb': 'h100_80g_nvl8.json',
}
# A100-40GB: HBM capacity and bandwidth from the NVIDIA A100 datasheet.
SYSTEM_OVERRIDES = {'a100-sxm-40gb': {'GiB': 40, 'GBps': 1555}}
# From validation/seqsel/tab5/*.json (the authors' Megatron validation).
VALIDATION_DEFAULTS = {
    'fused_activation': False,
    'weight_offload': False,
    'activations_offload': False,
    'optimizer_offload': False,
    'training': True,
}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('csvs', nargs='+', help='measured-run CSV files')
    p.add_argument('--peer-src', required=True,
                   help='extracted Calculon source tree')
    p.add_argument('--out', required=True, help='output CSV')
    return p.parse_args(argv)


def recompute_mode(row):
    """Calculon activation_recompute, or None when not expressible."""
    r = (row.get('recompute') or '').strip().lower()
    if r == '' or r.startswith('none'):
        return 'none'
    if r.startswith('full'):
        return 'full'
    if r in ('selective', 'selective (default modules)',
             'selective: core_attn'):
        return 'attn_only'
    return None


def unexpressible_reasons(row):
    """Concise reasons why Calculon cannot express a row (the comparison's scope, then what
    Calculon lacks); empty if it can."""
    why = scope_refusals(row)
    if row.get('accelerator') not in SYSTEM_FILES:
        why.append(f"no shipped system for {row.get('accelerator')}")
    if row.get('mlp') == 'gated':
        why.append('gated (SwiGLU) MLP: Calculon has a 2-matrix GeLU MLP only')
    kv, heads = num(row, 'kv_heads'), num(row, 'heads')
    if row.get('attention') == 'mla':
        why.append('multi-head latent attention')
    elif kv is not None and heads and 1 < kv < heads:
        why.append(f'grouped-query attention (kv_heads={kv}): Calculon has '
                   'multihead/multiquery only')
    if row.get('sharding') in ('fsdp', 'hsdp'):
        why.append(f"{row['sharding']} parameter sharding: Calculon shards "
                   'optimizer state/grads only')
    if recompute_mode(row) is None:
        why.append(f"recompute '{row.get('recompute')}' not expressible")
    return why


def sequence_parallel(row, tp):
    """Whether the run used Megatron sequence parallelism."""
    if tp <= 1:
        return False
    col = truthy(row, 'sequence_parallel')
    if col is not None:
        return col
    note = (row.get('note') or '').lower()
    if re.search(r'no sequence parallelism|sequence_parallel false', note):
        return False
    if re.search(r'sequence_parallel true', note):
        return True
    if row.get('framework') not in MEGATRON_FAMILY:
        return False
    released = release_month(row.get('framework_version'))
    return released is None or released >= SP_RELEASE


def release_month(version):
    """(year, month) of a dated framework version ('21.04', '2022.03'),
    None for undated ones (Megatron-Core '0.8' and blanks)."""
    m = re.match(r'(\d+)\.(\d+)', (version or '').strip())
    if not m or int(m.group(1)) == 0:
        return None
    year = int(m.group(1))
    return (year + 2000 if year < 100 else year, int(m.group(2)))


def optimizer_sharding(row, dp):
    """ZeRO-1/2 or Megatron's distributed optimizer (blank sharding)."""
    sharding = (row.get('sharding') or '').strip()
    if dp <= 1:
        return False
    if sharding in ('zero1', 'zero2'):
        return True
    return sharding == '' and row.get('framework') in MEGATRON_FAMILY


def network_ids(tp, pp, dp, node):
    """Megatron rank order tp, dp, pp: a dimension stays on NVLink (net 0)
    only while it and the inner dimensions fit in one node."""
    tn = 0 if tp <= node else 1
    dn = 0 if tp * dp <= node and tn == 0 else 1
    pn = 0 if tp * dp * pp <= node and dn == 0 else 1
    return tn, pn, dn


def application_json(row):
    hidden, heads = num(row, 'hidden'), num(row, 'heads')
    return {
        'hidden': hidden,
        'feedforward': num(row, 'ffn_hidden'),
        'seq_size': num(row, 'seq_len'),
        'attn_heads': heads,
        'attn_size': hidden // heads,
        'num_blocks': num(row, 'layers'),
    }


def execution_json(row, node, notes):
    """Calculon execution JSON; assumptions are appended to notes."""
    tp, pp, dp = num(row, 'tp'), num(row, 'pp'), num(row, 'dp')
    mbs = num(row, 'micro_batch')
    if mbs is None:
        mbs = 1
        notes.append('micro_batch blank: assumed 1')
    gbs = num(row, 'global_batch')
    if gbs is None:
        gbs = mbs * dp
        notes.append('global_batch blank: micro_batch*dp')
    sp = sequence_parallel(row, tp)
    comm = 'rs_ag' if sp else 'ar'
    recompute = recompute_mode(row)
    if (row.get('recompute') or '').strip() == '':
        notes.append("recompute blank: 'none'")
    tn, pn, dn = network_ids(tp, pp, dp, node)
    from calculon.llm import Llm
    exe = dict(VALIDATION_DEFAULTS)
    exe.update({
        'num_procs': tp * pp * dp,
        'tensor_par': tp, 'pipeline_par': pp, 'data_par': dp,
        'tensor_par_net': tn, 'pipeline_par_net': pn, 'data_par_net': dn,
        'batch_size': gbs, 'microbatch_size': mbs,
        'datatype': 'float16',
        'attention_type':
            'multiquery' if num(row, 'kv_heads') == 1 else 'multihead',
        'activation_recompute': recompute,
        'pipeline_interleaving': num(row, 'vpp') or 1,
        'optimizer_sharding': optimizer_sharding(row, dp),
        'tensor_par_comm_type': comm,
        'tensor_par_overlap':
            'ring' if tp > 1 and truthy(row, 'tp_comm_overlap') else 'none',
        'seq_par_ag_redo': Llm.can_redo_ag(comm, recompute),
        'data_par_overlap': bool(dp > 1 and truthy(row, 'dp_overlap')),
    })
    return exe


_SYSTEMS = {}  # accelerator -> shipped system JSON (with overrides)


def system_json(peer_src, row):
    """The row's system JSON and node size (NVLink tier size)."""
    acc = row['accelerator']
    if acc not in _SYSTEMS:
        path = os.path.join(peer_src, 'systems', SYSTEM_FILES[acc])
        with open(path) as fh:
            cfg = json.load(fh)
        cfg['mem1'].update(SYSTEM_OVERRIDES.get(acc, {}))
        _SYSTEMS[acc] = cfg
    cfg = copy.deepcopy(_SYSTEMS[acc])
    node = num(row, 'gpus_per_node') or cfg['networks'][0]['size']
    cfg['networks'][0]['size'] = node
    return cfg, node


def predict(peer_src, row, log):
    """Returns (expressible, reason, tokens/s/GPU, step seconds)."""
    from calculon import System
    from calculon.llm import Llm
    why = unexpressible_reasons(row)
    if why:
        return 'no', '; '.join(why), '', ''
    notes = []
    sys_cfg, node = system_json(peer_src, row)
    try:
        app = Llm.Application(application_json(row))
        exe = Llm.Execution.from_json(execution_json(row, node, notes))
        model = Llm(app, log)
        model.compile(System(sys_cfg), exe)
        try:
            model.run(model.sys)
        except Llm.Error as err:
            if not str(err).startswith('Mem tier'):
                raise
            notes.append(f'memory check failed ({err}); time still reported')
        step = model.get_total_time()
    except (Llm.Error, AssertionError) as err:
        return 'error', f'{type(err).__name__}: {err}'.strip(), '', ''
    tokens = exe.global_batch_size * app.seq_size
    tps = tokens / step / num(row, 'num_gpus')
    return 'yes', '; '.join(notes), f'{tps:.6g}', f'{step:.6g}'


def main(argv):
    args = parse_args(argv)
    peer_src = os.path.abspath(args.peer_src)
    sys.path.insert(0, peer_src)
    log = logging.getLogger('calculon_peer')
    log.setLevel(logging.WARNING)
    write_predictions(args.out, [
        dict(zip(OUT_COLUMNS, (row['id'], *predict(peer_src, row, log))))
        for row in read_runs(args.csvs)])
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
