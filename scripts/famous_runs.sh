#!/usr/bin/env bash
# Prints the figures of README.md's "Famous published runs" table: each published run as its
# request (the layout the run published, the rest left to the planner), against a fresh server
# of this build. The figures are a check, not data: none of these runs is in the fit.
#   bash scripts/famous_runs.sh [build]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake --build "$build" --target scalecast scalecast-server scalecast-validate > /dev/null
source scripts/scratch_server.sh
start_scratch_server "$build"

echo "Nemotron-4 340B, step seconds at 1,536 / 3,072 / 6,144 H100 (published 10.3 / 10.3 / 8.0):"
for fw in "" "--framework nemo --framework-version 24.01" \
  "--framework megatron-lm --framework-version 2024.03"; do
  steps=()
  for run in "1536 768" "3072 1536" "6144 2304"; do
    set -- $run
    # shellcheck disable=SC2086
    steps+=("$(field step_time_s --model nemotron4-340b --accelerator h100-sxm-80gb --gpus "$1" \
      --seq 4096 --global-batch "$2" --tp 8 --pp 12 $fw)")
  done
  echo "  ${fw:-generic}: ${steps[*]}"
done

# Llama 3 405B (Table 4 of the Llama 3 paper). Meta's count is torchtitan's
# get_num_flop_per_token: 6 x the parameters but the input embedding (403.75e9: 126 layers of
# 3,187,703,808, the final norm and the 2,101,346,304-weight output layer) plus 12 x layers x
# hidden x sequence, the causal half not taken off.
echo "Llama 3 405B, TFLOP/s a GPU (published 430 / 400 / 380), Meta's count then scalecast's:"
for run in "8192 64 1 8192 2048" "16384 128 1 8192 2048" "16384 8 16 131072 128"; do
  set -- $run
  read -r tps ours < <(field "tokens_per_s_per_gpu model_tflops_per_gpu" --model llama3-405b \
    --accelerator h100-sxm-80gb --gpus "$1" --tp 8 --pp 16 --dp "$2" --cp "$3" --seq "$4" \
    --global-batch "$5")
  meta=$(/usr/bin/python3 -c "print(round($tps * (6 * 403.75e9 + 12 * 126 * 16384 * $4) / 1e12))")
  echo "  $1 GPUs, cp $3, seq $4: $meta in Meta's count, $ours in scalecast's ($tps tokens/s)"
done

echo "DeepSeek-V3, 2,048 H800, tokens/s a GPU (published 1,543: 180K H800-hours a trillion):"
for fw in "--precision bf16" "--precision fp8" "--framework hai-llm --precision fp8"; do
  # shellcheck disable=SC2086
  read -r tps layout < <(field "tokens_per_s_per_gpu layout" --model deepseek-v3 \
    --accelerator h800-sxm-80gb --gpus 2048 --seq 4096 --global-batch 15360 $fw)
  echo "  $fw: $tps ($layout)"
done

echo "PaLM 540B, 6,144 TPU v4, 12-way model parallel, MFU (published 46.2 %):"
echo "  maxtext, full recompute: $(field mfu --model palm-540b --accelerator tpu-v4 --gpus 6144 \
  --seq 2048 --global-batch 2048 --framework maxtext --tp 12 --recompute full)"

# GLM-130B as its paper ran it: TP4 PP8 over 96 DGX A100 40GB, batch 4,224, fp16, every axis
# given (micro-batch 4, ZeRO-1, full recompute, no interleaving, no context parallelism).
glm=(--model glm-130b --accelerator a100-sxm-40gb --gpus 768 --seq 2048 --global-batch 4224
  --precision fp16 --tp 4 --pp 8 --vpp 1 --cp 1 --micro-batch 4 --sharding zero1 --recompute full)
echo "GLM-130B, 768 A100-40GB, MFU (published 32.5 %):"
read -r mfu fits < <(field "mfu fits" "${glm[@]}" --framework megatron-deepspeed \
  --framework-version 2022.03)
echo "  megatron-deepspeed 2022.03: $mfu (fits: $fits); generic: $(field mfu "${glm[@]}")"

echo "OPT-175B, 992 A100-80GB, FSDP + TP8, model TFLOP/s a GPU (published 147):"
echo "  $(field model_tflops_per_gpu --model opt-175b --accelerator a100-sxm-80gb --gpus 992 \
  --seq 2048 --global-batch 992 --tp 8 --pp 1 --sharding fsdp)"

echo "BloombergGPT, 512 A100-40GB, ZeRO-3 over 128, 50 Gb/s, model TFLOP/s a GPU (published 102):"
echo "  $(field model_tflops_per_gpu --model bloomberggpt-50b --accelerator a100-sxm-40gb \
  --gpus 512 --seq 2048 --global-batch 1024 --tp 1 --pp 1 --sharding hsdp --shard-group 128 \
  --network-gbps 50)"

echo "MPT-7B, 8 Gaudi 2, llm-foundry, model TFLOP/s a card (Databricks: over 260):"
echo "  $(field model_tflops_per_gpu --model mpt-7b --accelerator gaudi2-96gb --gpus 8 --seq 2048 \
  --global-batch 256 --framework composer)"

# Pure Mamba-2 training (state-spaces/mamba issue 904: 1.4B, d_model 2,048, 48 layers, 64 heads
# of 64, state 128, one group, 4 x 4,096 tokens, bf16, one GPU): its ratios, which no FLOP
# count changes, set the prior of global.ssd_kflops_per_sm_clock; the fitted value is the
# hybrid runs'.
echo "Pure Mamba-2 1.4B, one GPU, tokens/s (published 102.5 / 239.2 / 360.4 TFLOP/s on A100 / H200 / GB200: 0.43x and 1.51x H200):"
mamba2=(--layers 48 --hidden 2048 --heads 16 --ffn-hidden 8192 --vocab 50280
  --layer-pattern "$(printf 'M%.0s' $(seq 48))" --mamba-heads 64 --mamba-head-dim 64
  --mamba-state 128 --mamba-groups 1 --gpus 1 --precision bf16 --seq 4096 --global-batch 4
  --micro-batch 4 --tp 1 --pp 1 --recompute none)
a100=$(field tokens_per_s_per_gpu "${mamba2[@]}" --accelerator a100-sxm-80gb)
h200=$(field tokens_per_s_per_gpu "${mamba2[@]}" --accelerator h200-sxm-141gb)
gb200=$(field tokens_per_s_per_gpu "${mamba2[@]}" --accelerator gb200-nvl72)
echo "  $a100 / $h200 / $gb200: $(/usr/bin/python3 -c "print('%.2fx and %.2fx H200' % ($a100 / $h200, $gb200 / $h200))")"

echo "GPT-3 175B, MLPerf Training v3.0-v4.0 on Gaudi 2 (data/mlperf-gpt3-gaudi2.csv, out of the fit):"
"$build/tools/scalecast-validate" --no-holdout data/mlperf-gpt3-gaudi2.csv | grep '^79' | sed 's/^/  /'
