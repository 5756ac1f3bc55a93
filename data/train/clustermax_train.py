#!/usr/bin/env python3
"""clustermax built-in training benchmark.

`clustermax bench train` launches this script through Slurm (srun, one task
per GPU, or one task per node on CPU).  It trains a small decoder-only
transformer on synthetic but learnable data and prints one machine-readable
line per event on stdout:

    CMAX-TRAIN {"event":"start",...}
    CMAX-TRAIN {"event":"peak",...}      (only with --peak-seconds > 0)
    CMAX-TRAIN {"event":"step",...}      (one per step)
    CMAX-TRAIN {"event":"end",...}
    CMAX-TRAIN {"event":"error",...}     (on an exception; exit code 1)

Every rank prints its own lines; srun --label prefixes them with "N: ".
A step's "loss" is that rank's local loss (null when not finite; its
"loss_hex" is always given), "step_s" times forward, backward and the
optimizer step only, and "compute_s" the forward pass alone (no communication,
so a slow rank shows there even though DDP makes every step as slow as it).  The start event also carries "warmup_steps": the
caller leaves that many leading steps out of its timing statistics.
Only torch and the standard library are used, and the script runs on
Debian 12's python3-torch 1.13 (CPU) as well as on PyTorch 2.x with CUDA.

The distributed setup comes from the environment (RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT, falling back to Slurm's SLURM_PROCID,
SLURM_NTASKS and SLURM_LOCALID); the process group is initialised with
init_method env:// only when the world size is above 1.
"""

import argparse
import json
import math
import os
import socket
import sys
import time
import traceback

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

PREFIX = "CMAX-TRAIN "


def emit(event, **fields):
    """Print one event line: the prefix, then compact JSON on one line."""
    record = {"event": event}
    record.update(fields)
    sys.stdout.write(PREFIX + json.dumps(record, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def env_int(names, default):
    """The first of the environment variables `names` that is set, as int."""
    for name in names:
        value = os.environ.get(name)
        if value not in (None, ""):
            return int(value)
    return default


class ArgumentParser(argparse.ArgumentParser):
    """Raises on a bad argument instead of exiting 2, so that the failure
    is reported as an error event like any other."""

    def error(self, message):
        raise ValueError("bad arguments: " + message)


def parse_args(argv):
    p = ArgumentParser(description="clustermax training benchmark")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=1024, help="MLP hidden size")
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--seq", type=int, default=256, help="sequence length")
    p.add_argument("--batch", type=int, default=8,
                   help="sequences per rank per step")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--warmup-steps", type=int, default=0,
                   help="leading steps the caller excludes from timing stats "
                        "(reported in the start event; all steps still run)")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default=None,
                   help="bf16 = bf16 autocast (default: bf16 on CUDA, "
                        "fp32 on CPU)")
    p.add_argument("--backend", choices=["auto", "nccl", "gloo"],
                   default="auto")
    p.add_argument("--deterministic", action="store_true",
                   help="same batch on every rank, fixed seeds, deterministic "
                        "algorithms: the ranks' losses must match bit for bit")
    p.add_argument("--threads", type=int, default=0,
                   help="torch.set_num_threads when > 0")
    p.add_argument("--peak-seconds", type=float, default=0.0,
                   help="time a square matmul for about this long first "
                        "(0 = off)")
    args = p.parse_args(argv)
    if args.dim % args.heads:
        p.error("--dim must be a multiple of --heads")
    return args


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention, then an MLP."""

    def __init__(self, dim, heads, ffn, use_sdpa):
        super().__init__()
        self.heads = heads
        self.use_sdpa = use_sdpa
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, ffn)
        self.fc2 = nn.Linear(ffn, dim)

    def attention(self, x):
        b, t, c = x.shape
        # (b, t, 3c) -> three tensors of shape (b, heads, t, head_dim).
        q, k, v = (self.qkv(x).view(b, t, 3, self.heads, c // self.heads)
                   .permute(2, 0, 3, 1, 4))
        if self.use_sdpa:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
            # True above the diagonal: the future positions a token may not
            # see.  Built per call, not kept as a buffer: DDP broadcasts
            # buffers, and gloo cannot broadcast bool tensors.
            future = torch.ones(t, t, dtype=torch.bool,
                                device=x.device).triu(diagonal=1)
            scores = scores.masked_fill(future, float("-inf"))
            out = torch.softmax(scores, dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, t, c))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class TinyGPT(nn.Module):
    """Decoder-only LM: token + learned position embeddings, N blocks,
    final norm and an untied output head."""

    def __init__(self, args, use_sdpa):
        super().__init__()
        self.tok = nn.Embedding(args.vocab, args.dim)
        self.pos = nn.Embedding(args.seq, args.dim)
        self.blocks = nn.ModuleList(
            Block(args.dim, args.heads, args.ffn, use_sdpa)
            for _ in range(args.layers))
        self.norm = nn.LayerNorm(args.dim)
        self.head = nn.Linear(args.dim, args.vocab, bias=False)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.tok(tokens) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


class SyntheticData:
    """Learnable token streams.  A random cyclic order of the vocabulary
    (the same on every rank) defines each token's successor; a sequence is a
    walk along that cycle from a random start, with 10% of its tokens
    replaced by uniform noise.  A model learns the successor rule within a
    few steps, so the loss falls visibly.  Generation is vectorised and runs
    on the CPU from its own generator, so batches depend only on the seed."""

    NOISE = 0.1

    def __init__(self, vocab, seq, batch, order_seed, stream_seed):
        g = torch.Generator().manual_seed(order_seed)
        self.order = torch.randperm(vocab, generator=g)
        self.gen = torch.Generator().manual_seed(stream_seed)
        self.vocab, self.seq, self.batch = vocab, seq, batch

    def next_batch(self):
        # seq + 1 tokens per row: inputs are [:-1], targets are [1:].
        n = self.seq + 1
        start = torch.randint(self.vocab, (self.batch, 1), generator=self.gen)
        walk = self.order[(start + torch.arange(n)) % self.vocab]
        noise = torch.randint(self.vocab, walk.shape, generator=self.gen)
        noisy = torch.rand(walk.shape, generator=self.gen) < self.NOISE
        tokens = torch.where(noisy, noise, walk)
        return tokens[:, :-1], tokens[:, 1:]


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_peak(device, dtype_name, seconds, rank):
    """Time a square matmul in the training dtype repeatedly for about
    `seconds` and report the best batch in TFLOP/s (2*n^3 FLOPs per matmul):
    the measured peak that MFU is computed against on CPU."""
    dtype = torch.bfloat16 if dtype_name == "bf16" else torch.float32
    n_max = 8192 if device.type == "cuda" else 2048

    def timed_matmul(a, b):
        t0 = time.perf_counter()
        torch.mm(a, b)
        sync(device)
        return max(time.perf_counter() - t0, 1e-9)

    # n starts at 256 and doubles up to n_max while a matmul of the next
    # size should take at most a twentieth of the budget, so that a slow
    # BLAS or few threads stop it early and the run stays near `seconds`.
    # Each size is timed after one warm-up matmul.
    target = seconds / 20
    n, per_matmul = 128, 0.0
    while n < n_max and per_matmul * 8 <= target:
        n *= 2
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        timed_matmul(a, b)
        per_matmul = timed_matmul(a, b)
    # Batches of about a tenth of the budget; the best one counts.
    per_batch = max(1, int(seconds / 10 / per_matmul))
    best = 0.0
    deadline = time.perf_counter() + seconds
    batches = 0
    while batches < 3 or time.perf_counter() < deadline:
        t0 = time.perf_counter()
        for _ in range(per_batch):
            torch.mm(a, b)
        sync(device)
        elapsed = time.perf_counter() - t0
        best = max(best, 2.0 * n ** 3 * per_batch / elapsed / 1e12)
        batches += 1
    emit("peak", rank=rank, tflops=best, n=n, dtype=dtype_name)


def train(args, rank, world, local_rank):
    cuda = torch.cuda.is_available()
    backend = args.backend
    if backend == "auto":
        backend = "nccl" if cuda else "gloo"
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dtype = args.dtype or ("bf16" if cuda else "fp32")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.deterministic:
        # warn_only: an op without a deterministic kernel warns, not fails.
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.benchmark = False
    if world > 1:
        dist.init_process_group(backend, init_method="env://",
                                rank=rank, world_size=world)

    # The same seed everywhere gives every rank the same initial weights
    # (DDP also broadcasts rank 0's).  Only the data stream depends on the
    # rank, and not even that with --deterministic.
    torch.manual_seed(args.seed)
    use_sdpa = (hasattr(F, "scaled_dot_product_attention")
                and not args.deterministic)
    model = TinyGPT(args, use_sdpa).to(device)
    params = sum(p.numel() for p in model.parameters())
    if world > 1:
        model = nn.parallel.DistributedDataParallel(
            model, device_ids=[local_rank] if cuda else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr,
                                  betas=(0.9, 0.95), weight_decay=0.01)
    data = SyntheticData(args.vocab, args.seq, args.batch, args.seed,
                         args.seed if args.deterministic else args.seed + rank)

    # "backend" is the one resolved, even at world size 1 where no process
    # group is created.
    emit("start", rank=rank, world=world, local_rank=local_rank,
         host=socket.gethostname(), device=str(device),
         gpu_name=torch.cuda.get_device_name(device) if cuda else None,
         backend=backend, torch=torch.__version__, params=params, dtype=dtype,
         threads=torch.get_num_threads(), warmup_steps=args.warmup_steps)

    if args.peak_seconds > 0:
        measure_peak(device, dtype, args.peak_seconds, rank)

    tokens_per_step = args.batch * args.seq
    t_begin = time.perf_counter()
    for step in range(1, args.steps + 1):
        inputs, targets = data.next_batch()
        inputs, targets = inputs.to(device), targets.to(device)
        sync(device)
        t0 = time.perf_counter()
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                            enabled=(dtype == "bf16")):
            logits = model(inputs)
        # The loss is computed in fp32 outside autocast.  It is this rank's
        # local loss; DDP averages only the gradients.
        loss = F.cross_entropy(logits.float().reshape(-1, args.vocab),
                               targets.reshape(-1))
        # The forward pass holds no communication (DDP talks only in backward, where
        # every rank waits for the slowest): its time is this rank's own speed.
        sync(device)
        compute_s = time.perf_counter() - t0
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        sync(device)
        step_s = time.perf_counter() - t0
        # .item() of a float32 tensor is the exact float64 of that value.
        value = loss.item()
        emit("step", rank=rank, step=step,
             loss=value if math.isfinite(value) else None,
             loss_hex=float(value).hex(), step_s=step_s, compute_s=compute_s,
             tokens=tokens_per_step)
    emit("end", rank=rank, steps=args.steps,
         seconds=time.perf_counter() - t_begin)


def main(argv):
    rank = env_int(["RANK", "SLURM_PROCID"], 0)
    try:
        args = parse_args(argv)
        world = env_int(["WORLD_SIZE", "SLURM_NTASKS"], 1)
        local_rank = env_int(["LOCAL_RANK", "SLURM_LOCALID"], 0)
        if args.deterministic:
            # cuBLAS reads this when it creates its first handle, so it must
            # be set before any CUDA work.
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        train(args, rank, world, local_rank)
    except Exception as exc:  # report any failure as an event, then exit 1
        traceback.print_exc(file=sys.stderr)
        emit("error", rank=rank, message="%s: %s" % (type(exc).__name__, exc))
        return 1
    finally:
        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
