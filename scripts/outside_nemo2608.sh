#!/usr/bin/env bash
# An outside check, not calibration data: the "26.08 NeMo Container" pre-training table of
# NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md (at v0.6.0, 2026-08-19, and at main
# @4ab94dfa; MoE only, force-balanced and dropless per its footnote), each row as its request
# against a fresh server of this build. No row of it is in data/ or the fit.
#   bash scripts/outside_nemo2608.sh [build]
# One request a row: the table's facts only (release 26.08, layout, batch, sequence, precision,
# force-balanced routing). Release 26.08 is Megatron-Bridge v0.6.0, whose per-GPU-count recipes
# (src/megatron/bridge/perf_recipes) give each model, GPU and precision its switches, recompute
# and MTP passes (model/data/bridge_presets.txt). Nemotron 3 Super's GB300 and GB200 recipes
# build on recipes/nemotronh/h100/nemotron_3_super.py's 16-GPU config (perf_recipes/nemotronh/
# common.py imports nemotron_3_super_pretrain_16gpu_h100_bf16_config): no recompute, dropless,
# 2 MTP passes; only its 64-GPU H100 recipe recomputes. DeepSeekV4 Flash, Nemotron 3.5 Lightning
# and Nemotron 3 Ultra are not in the catalog and are left out. Two other Nemotron 3 Super runs
# of the same tag, its model cards' bf16 H100 and GB200 measurements, are fitted since
# 2026.12.16 (data/megatron-bridge-cards-2026.csv 8003, 8004); no row of this table is.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake --build "$build" --target scalecast scalecast-server > /dev/null
source scripts/scratch_server.sh
start_scratch_server "$build"

errors=()
# row MODEL ACCELERATOR GPUS PRECISION GBS MBS SEQ TP PP VPP EP MEASURED [FLAGS...]: prints the
# prediction against the table's tokens/s per GPU and keeps the error.
row() {
  local model=$1 acc=$2 gpus=$3 prec=$4 gbs=$5 mbs=$6 seq=$7 tp=$8 pp=$9 vpp=${10} ep=${11}
  local measured=${12}
  shift 12
  local vflag=()
  [[ $vpp == - ]] || vflag=(--vpp "$vpp")
  local tps layout
  read -r tps layout < <(field "tokens_per_s_per_gpu layout" --model "$model" \
    --accelerator "$acc" --gpus "$gpus" --precision "$prec" --global-batch "$gbs" \
    --micro-batch "$mbs" --seq "$seq" --tp "$tp" --pp "$pp" "${vflag[@]}" --cp 1 --ep "$ep" \
    --force-balance --framework nemo --framework-version 26.08 "$@")
  local err
  err=$(/usr/bin/python3 -c "print('%+.1f' % (100 * ($tps / $measured - 1)))")
  errors+=("$err")
  printf '  %-24s %-12s %-6s %8.0f predicted %6d measured %6s %%  %s\n' "$model" "$acc" "$prec" \
    "$tps" "$measured" "$err" "$layout"
}
mape() {
  /usr/bin/python3 -c 'import sys; e = [abs(float(x)) for x in sys.argv[1:]]
print("  MAPE %.1f %% over %d rows" % (sum(e) / len(e), len(e)))' "${errors[@]}"
  errors=()
}

echo "The table's facts only:"
row deepseek-v3 gb300-nvl72 256 mxfp8 4096 1 4096 1 2 8 32 6288
row deepseek-v3 gb200-nvl72 256 mxfp8 4096 1 4096 1 4 4 64 4912
row gpt-oss-120b gb300-nvl72 64 mxfp8 1280 4 4096 1 1 - 16 33024
row gpt-oss-120b gb200-nvl72 64 mxfp8 1280 4 4096 1 1 - 64 28672
row qwen3-30b-a3b gb300-nvl72 8 mxfp8 512 8 4096 1 1 - 8 44544
row qwen3-30b-a3b gb200-nvl72 8 mxfp8 512 4 4096 1 1 - 8 39936
row qwen3-235b-a22b gb300-nvl72 256 mxfp8 8192 2 4096 1 4 12 32 8816
row qwen3-235b-a22b gb200-nvl72 256 mxfp8 8192 1 4096 1 8 3 32 7280
row nemotron-3-nano-30b-a3b gb300-nvl72 8 mxfp8 512 4 8192 1 1 - 8 39936
row nemotron-3-super-120b gb300-nvl72 64 mxfp8 512 1 8192 1 1 - 64 9856
row nemotron-3-super-120b gb300-nvl72 64 nvfp4 512 1 8192 1 1 - 64 10240
row nemotron-3-super-120b gb200-nvl72 64 mxfp8 512 1 8192 2 1 - 64 7040
row nemotron-3-super-120b gb200-nvl72 64 nvfp4 512 1 8192 2 1 - 64 7168
mape
