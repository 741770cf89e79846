#!/usr/bin/env python3
"""Measures, on one NVIDIA GPU, the quantities behind scalecast's kernel and host constants.

Run where PyTorch sees a GPU (not in CI: nothing in the build or the tests needs it):
    PYTHONUNBUFFERED=1 python3 scripts/device/measure_gpu.py OUT_DIR
It writes OUT_DIR/measure_gpu.json section by section (a section that fails records its error and
the rest still run) and prints one line per figure. Sections:

  env       GPU, driver, PyTorch and CUDA versions, power limit
  gemm      bf16 matrix products by shape (model/hardware.h kGemmKneePerSm, kGemmFixedS), and
            back-to-back small products (the per-kernel cost in a stream)
  dispatch  eager PyTorch's host time per op, without and with autograd, and a CUDA graph's
            replay per kernel (kEagerKernelMinS, kMemKernelMinS)
  attention causal SDPA forward+backward by sequence and head width, flash and cuDNN back-ends
            (kAttnSeqKnee, the head-width knees)
  power     board power idle and under a sustained 8192^3 bf16 product (kComputeActivity)
  train     plain-PyTorch training steps of GPT-2 124M and Llama 3.2 1B / 3B shapes (fp32
            parameters, bf16 autocast, fused AdamW, SDPA) by micro batch and accumulation, eager
            and compiled: step time, peak memory and average power, to set against
            `scalecast predict` for the same scenario
"""
import json
import math
import os
import statistics
import sys
import threading
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", ".")
RESULTS = {}
START = time.time()


def save():
    with open(os.path.join(OUT, "measure_gpu.json"), "w") as f:
        json.dump(RESULTS, f, indent=1, sort_keys=True)


def section(name):
    def wrap(fn):
        def run(*args):
            t0 = time.time()
            try:
                RESULTS[name] = fn(*args)
            except Exception:  # a failed section is recorded; the others still run
                RESULTS[name] = {"error": traceback.format_exc()}
                print(RESULTS[name]["error"])
            RESULTS.setdefault("elapsed_s", {})[name] = round(time.time() - t0, 1)
            save()
        return run
    return wrap


def bench_ms(fn, warmup=5, reps=20):
    """Median milliseconds of fn() by CUDA events, one event pair per call."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


class PowerSampler:
    """Samples board power (W) and SM clock (MHz) every 50 ms through NVML while active."""

    def __init__(self):
        import pynvml
        pynvml.nvmlInit()
        self.nvml = pynvml
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        self.samples = []
        self.stop = threading.Event()
        self.thread = None

    def read(self):
        n = self.nvml
        return (n.nvmlDeviceGetPowerUsage(self.handle) / 1000.0,
                n.nvmlDeviceGetClockInfo(self.handle, n.NVML_CLOCK_SM))

    def __enter__(self):
        self.samples = []
        self.stop.clear()

        def loop():
            while not self.stop.is_set():
                self.samples.append(self.read())
                time.sleep(0.05)
        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def summary(self):
        if not self.samples:
            return {}
        watts = sorted(s[0] for s in self.samples)
        clocks = sorted(s[1] for s in self.samples)
        return {"power_w_median": statistics.median(watts), "power_w_mean": statistics.mean(watts),
                "power_w_max": watts[-1], "sm_clock_mhz_median": statistics.median(clocks),
                "samples": len(watts)}


def sampler_or_none():
    try:
        return PowerSampler()
    except Exception:
        return None


@section("env")
def env():
    p = torch.cuda.get_device_properties(0)
    info = {"gpu": p.name, "sms": p.multi_processor_count, "memory_gib": p.total_memory / 2**30,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version()}
    s = sampler_or_none()
    if s:
        n = s.nvml
        info["driver"] = n.nvmlSystemGetDriverVersion()
        info["power_limit_w"] = n.nvmlDeviceGetEnforcedPowerLimit(s.handle) / 1000.0
        info["max_sm_clock_mhz"] = n.nvmlDeviceGetMaxClockInfo(s.handle, n.NVML_CLOCK_SM)
    print("env", info)
    return info


@section("gemm")
def gemm():
    shapes = [(s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192, 16384)]
    shapes += [(8192, 8192, k) for k in (128, 256, 512, 1024, 2048)]
    shapes += [(m, 8192, 8192) for m in (128, 256, 512, 1024, 2048)]
    shapes += [(8192, n, 8192) for n in (256, 1024)]
    # GPT-2 124M at 16 x 1024 tokens, Llama 3.2 1B at 8 x 2048 (qkv, proj, fc1, fc2, head).
    shapes += [(16384, 2304, 768), (16384, 768, 768), (16384, 3072, 768), (16384, 768, 3072),
               (16384, 50257, 768), (16384, 3072, 2048), (16384, 2048, 2048),
               (16384, 16384, 2048), (16384, 2048, 8192), (16384, 128256, 2048)]
    rows = []
    for m, n, k in shapes:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        reps = max(5, min(200, int(2e12 / (2 * m * n * k))))
        ms = bench_ms(lambda: a @ b, warmup=3, reps=reps)
        tf = 2 * m * n * k / (ms * 1e-3) / 1e12
        rows.append({"m": m, "n": n, "k": k, "ms": ms, "tflops": tf})
        print(f"gemm {m}x{n}x{k}: {ms:.4f} ms {tf:.1f} TFLOP/s")
        del a, b
    # Back-to-back products in one stream: what a small GEMM costs when launches overlap.
    stream = []
    for s in (256, 512, 1024):
        a = torch.randn(s, s, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(s, s, device="cuda", dtype=torch.bfloat16)

        def many():
            for _ in range(200):
                torch.mm(a, b)
        ms = bench_ms(many, warmup=2, reps=5) / 200
        stream.append({"size": s, "us_each": ms * 1e3})
        print(f"gemm back-to-back {s}^3: {ms * 1e3:.2f} us each")
    fp8 = {}
    try:
        a = torch.randn(8192, 8192, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(8192, 8192, device="cuda").to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device="cuda")
        ms = bench_ms(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                               out_dtype=torch.bfloat16), reps=50)
        fp8 = {"size": 8192, "ms": ms, "tflops": 2 * 8192**3 / (ms * 1e-3) / 1e12}
        print("fp8 gemm 8192^3", fp8)
    except Exception as e:
        fp8 = {"error": repr(e)}
    return {"shapes": rows, "back_to_back": stream, "fp8_tensorwise": fp8}


@section("dispatch")
def dispatch():
    x = torch.zeros(1024, device="cuda")
    n = 20000
    for _ in range(100):
        x.add_(1.0)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        x.add_(1.0)
    torch.cuda.synchronize()
    no_grad_us = (time.perf_counter() - t0) / n * 1e6
    # With autograd: a chain of element-wise ops, forward and backward (each op's backward is
    # one or two kernels).
    w = torch.ones(1024, device="cuda", requires_grad=True)
    chain = 500

    def fwd_bwd():
        y = w
        for _ in range(chain):
            y = y * 1.0001
        y.sum().backward()
    for _ in range(3):
        fwd_bwd()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    reps = 20
    for _ in range(reps):
        fwd_bwd()
    torch.cuda.synchronize()
    autograd_us = (time.perf_counter() - t0) / (reps * chain) * 1e6
    # A CUDA graph of the same small kernels, replayed.
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            x.add_(1.0)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        for _ in range(1000):
            x.add_(1.0)
    g.replay()
    torch.cuda.synchronize()
    graph_ms = bench_ms(g.replay, warmup=2, reps=10)
    out = {"eager_op_us": no_grad_us, "eager_autograd_op_fwd_bwd_us": autograd_us,
           "graph_kernel_us": graph_ms * 1e3 / 1000}
    print("dispatch", out)
    return out


@section("attention")
def attention():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    rows = []
    hidden, tokens = 2048, 16384
    for backend in ("flash", "cudnn"):
        kind = SDPBackend.FLASH_ATTENTION if backend == "flash" else SDPBackend.CUDNN_ATTENTION
        for d in (64, 128):
            for s in (512, 1024, 2048, 4096, 8192, 16384):
                b, h = max(1, tokens // s), hidden // d
                q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16,
                                       requires_grad=True) for _ in range(3))
                g = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)

                def step():
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    o.backward(g)
                try:
                    with sdpa_kernel([kind]):
                        ms = bench_ms(step, warmup=3, reps=10)
                        fwd = bench_ms(lambda: F.scaled_dot_product_attention(
                            q.detach(), k.detach(), v.detach(), is_causal=True), warmup=3, reps=10)
                except Exception as e:
                    rows.append({"backend": backend, "d": d, "seq": s, "error": repr(e)[:200]})
                    continue
                flops_fwd = 4 * b * h * s * s * d / 2  # causal: half the score matrix
                row = {"backend": backend, "d": d, "seq": s, "batch": b, "heads": h,
                       "fwd_bwd_ms": ms, "fwd_ms": fwd,
                       "fwd_bwd_tflops": 3.5 * flops_fwd / (ms * 1e-3) / 1e12,
                       "fwd_tflops": flops_fwd / (fwd * 1e-3) / 1e12}
                rows.append(row)
                print("attention", row)
                del q, k, v, g
    return rows


@section("power")
def power():
    s = PowerSampler()
    torch.cuda.synchronize()
    time.sleep(1.0)
    with s:
        time.sleep(2.0)
    idle = s.summary()
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(50):
        torch.mm(a, b, out=c)
    torch.cuda.synchronize()
    n = 0
    t0 = time.perf_counter()
    with s:
        while time.perf_counter() - t0 < 12.0:
            for _ in range(50):
                torch.mm(a, b, out=c)
            torch.cuda.synchronize()
            n += 50
    dt = time.perf_counter() - t0
    load = s.summary()
    load["tflops"] = 2 * 8192**3 * n / dt / 1e12
    out = {"idle": idle, "gemm_8192": load,
           "limit_w": s.nvml.nvmlDeviceGetEnforcedPowerLimit(s.handle) / 1000.0}
    print("power", out)
    return out


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return F.rms_norm(x, (x.shape[-1],), self.weight, 1e-5)


def rope(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, self.h, self.kvh = c["hidden"], c["heads"], c["kv_heads"]
        self.hd = d // self.h
        bias, self.gated = c["bias"], c["gated"]
        norm = (lambda: nn.LayerNorm(d)) if c["norm"] == "layer" else (lambda: RMSNorm(d))
        self.n1, self.n2 = norm(), norm()
        self.qkv = nn.Linear(d, (self.h + 2 * self.kvh) * self.hd, bias=bias)
        self.proj = nn.Linear(d, d, bias=bias)
        f = c["ffn"]
        self.fc1 = nn.Linear(d, 2 * f if self.gated else f, bias=bias)
        self.fc2 = nn.Linear(f, d, bias=bias)

    def forward(self, x, cos, sin):
        b, s, d = x.shape
        q, k, v = self.qkv(self.n1(x)).split(
            [self.h * self.hd, self.kvh * self.hd, self.kvh * self.hd], dim=-1)
        q = q.view(b, s, self.h, self.hd).transpose(1, 2)
        k = k.view(b, s, self.kvh, self.hd).transpose(1, 2)
        v = v.view(b, s, self.kvh, self.hd).transpose(1, 2)
        if cos is not None:
            q, k = rope(q, cos, sin), rope(k, cos, sin)
        if self.kvh != self.h:  # grouped-query: repeat K and V per query head (HF's repeat_kv)
            k = k.repeat_interleave(self.h // self.kvh, dim=1)
            v = v.repeat_interleave(self.h // self.kvh, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(o.transpose(1, 2).reshape(b, s, d))
        h = self.fc1(self.n2(x))
        if self.gated:
            g, u = h.chunk(2, dim=-1)
            h = F.silu(g) * u
        else:
            h = F.gelu(h, approximate="tanh")
        return x + self.fc2(h)


class LM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.emb = nn.Embedding(c["vocab"], c["hidden"])
        self.pos = nn.Embedding(c["seq"], c["hidden"]) if c["norm"] == "layer" else None
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.norm = nn.LayerNorm(c["hidden"]) if c["norm"] == "layer" else RMSNorm(c["hidden"])
        self.head = nn.Linear(c["hidden"], c["vocab"], bias=False)
        self.head.weight = self.emb.weight  # tied, as all three presets are
        hd = c["hidden"] // c["heads"]
        if self.pos is None:
            inv = 1.0 / (500000 ** (torch.arange(0, hd, 2).float() / hd))
            ang = torch.outer(torch.arange(c["seq"]).float(), inv)
            self.register_buffer("cos", ang.cos(), persistent=False)
            self.register_buffer("sin", ang.sin(), persistent=False)
        else:
            self.cos = self.sin = None

    def forward(self, idx, targets):
        x = self.emb(idx)
        if self.pos is not None:
            x = x + self.pos(torch.arange(idx.shape[1], device=idx.device))
        cos = sin = None
        if self.cos is not None:
            cos, sin = self.cos.to(x.dtype), self.sin.to(x.dtype)
        for blk in self.blocks:
            x = blk(x, cos, sin)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


GPT2 = dict(layers=12, hidden=768, heads=12, kv_heads=12, ffn=3072, vocab=50257, seq=1024,
            bias=True, gated=False, norm="layer")
LLAMA1B = dict(layers=16, hidden=2048, heads=32, kv_heads=8, ffn=8192, vocab=128256, seq=2048,
               bias=False, gated=True, norm="rms")
LLAMA3B = dict(layers=28, hidden=3072, heads=24, kv_heads=8, ffn=8192, vocab=128256, seq=4096,
               bias=False, gated=True, norm="rms")


def train_case(name, c, micro, accum, compiled, steps):
    torch.manual_seed(0)
    model = LM(c).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    fwd = torch.compile(model) if compiled else model
    data = torch.randint(0, c["vocab"], (micro, c["seq"] + 1), device="cuda")
    x, y = data[:, :-1].contiguous(), data[:, 1:].contiguous()

    def step():
        for _ in range(accum):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = fwd(x, y) / accum
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    t0 = time.perf_counter()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    warm_s = time.perf_counter() - t0
    torch.cuda.reset_peak_memory_stats()
    sampler = sampler_or_none()
    times = []
    if sampler:
        sampler.__enter__()
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = step()
        loss.item()  # the host reads the loss every step, as training loops log it
        times.append(time.perf_counter() - t0)
    if sampler:
        sampler.__exit__()
    params = sum(p.numel() for p in model.parameters())
    step_s = statistics.median(times)
    row = {"case": name, "micro_batch": micro, "accum": accum, "global_batch": micro * accum,
           "seq": c["seq"], "compiled": compiled, "params": params, "step_s": step_s,
           "step_s_min": min(times), "tokens_per_s": micro * accum * c["seq"] / step_s,
           "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30,
           "reserved_gib": torch.cuda.max_memory_reserved() / 2**30, "warmup_s": warm_s}
    if sampler:
        row.update(sampler.summary())
    print("train", row)
    del model, opt, fwd
    torch.cuda.empty_cache()
    return row


@section("train")
def train():
    rows = []
    cases = [("gpt2", GPT2, m, 1, False, 12) for m in (4, 8, 16, 32)]
    cases += [("gpt2", GPT2, 16, 4, False, 8), ("gpt2", GPT2, 1, 1, False, 20)]
    cases += [("llama3.2-1b", LLAMA1B, m, 1, False, 10) for m in (2, 8)]
    cases += [("llama3.2-1b", LLAMA1B, 4, 4, False, 6), ("llama3.2-3b", LLAMA3B, 2, 2, False, 6)]
    cases += [("gpt2", GPT2, 16, 1, True, 12), ("llama3.2-1b", LLAMA1B, 8, 1, True, 8)]
    for case in cases:
        if time.time() - START > float(os.environ.get("BUDGET_S", "330")):
            rows.append({"case": case[0], "skipped": "time budget"})
            continue
        try:
            rows.append(train_case(*case))
        except Exception as e:
            rows.append({"case": case[0], "micro_batch": case[2], "compiled": case[4],
                         "error": repr(e)[:300]})
            print("train error", case[:5], repr(e)[:300])
            torch.cuda.empty_cache()
        save()
    return rows


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    env()
    dispatch()
    gemm()
    attention()
    power()
    train()
    RESULTS["total_s"] = round(time.time() - START, 1)
    save()
    print("done in", RESULTS["total_s"], "s")
