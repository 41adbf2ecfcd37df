#!/usr/bin/env python3
"""NCCL alltoall bandwidth through PyTorch, the reference for dev_alltoall.

    torchrun --standalone --nproc_per_node=N scripts/nccl_alltoall.py \
        [--min-size 1M] [--max-size 1G] [--iters 20] [--warmup 5]

Each size S is the bytes every rank sends in all (nccl-tests' "size"), split
into equal chunks for the ranks; sizes double from --min-size to --max-size.
Rank 0 prints the same CSV as test/perf/cuda/dev_alltoall ("# nccl_alltoall,
nccl,<ranks>", then "size,busbw_gbs,algbw_gbs,time_us"), with algbw = S / time
and busbw = algbw * (ranks - 1) / ranks as nccl-tests define them for
alltoall. Time is rank 0's, per call, averaged over --iters calls after
--warmup untimed ones. Exits 77 when PyTorch, CUDA or NCCL is missing.
"""

import argparse
import os
import sys
import time

SKIP = 77


def parse_size(text):
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().replace("IB", "").rstrip("B")
    suffix = t[-1:] if t[-1:] in ("K", "M", "G") else ""
    digits = t[:-1] if suffix else t
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(f"not a size: {text}")
    return int(digits) * units[suffix]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-size", type=parse_size, default=1 << 20)
    ap.add_argument("--max-size", type=parse_size, default=1 << 30)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    if args.min_size < 1 or args.min_size > args.max_size or args.iters < 1:
        ap.error("need 1 <= --min-size <= --max-size and --iters >= 1")

    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        print(f"nccl_alltoall: PyTorch is not installed ({e}); skipped")
        return SKIP
    if not torch.cuda.is_available() or not dist.is_nccl_available():
        print("nccl_alltoall: PyTorch has no CUDA device or no NCCL here; skipped")
        return SKIP
    if "LOCAL_RANK" not in os.environ:
        print("nccl_alltoall: start it with torchrun --standalone --nproc_per_node=N",
              file=sys.stderr)
        return 2

    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local % torch.cuda.device_count())
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"# nccl_alltoall,nccl,{world}")
        print("size,busbw_gbs,algbw_gbs,time_us")
        v = torch.cuda.nccl.version()
        nccl = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
        print(f"# torch {torch.__version__}, NCCL {nccl}, all_to_all_single on uint8, "
              f"{args.iters} iterations after {args.warmup} warm-up")
        sys.stdout.flush()

    size = args.min_size
    while size <= args.max_size:
        # Equal chunks of whole 16-byte units, as dev_alltoall moves them.
        chunk = size // world // 16 * 16
        if chunk == 0:
            size *= 2
            continue
        moved = chunk * world
        send = torch.empty(moved, dtype=torch.uint8, device="cuda").fill_(rank & 0xff)
        recv = torch.empty(moved, dtype=torch.uint8, device="cuda")
        for _ in range(args.warmup):
            dist.all_to_all_single(recv, send)
        torch.cuda.synchronize()
        dist.barrier()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.iters):
            dist.all_to_all_single(recv, send)
        torch.cuda.synchronize()
        us = (time.perf_counter() - t0) * 1e6 / args.iters
        # Chunk j of what arrived came from rank j.
        sources = torch.arange(world, device="cuda", dtype=torch.int64) & 0xff
        if not bool((recv.view(world, chunk) == sources.to(torch.uint8).unsqueeze(1)).all()):
            print(f"nccl_alltoall: rank {rank}: wrong data at {size} bytes", file=sys.stderr)
            dist.destroy_process_group()
            return 1
        if rank == 0:
            algbw = moved / (us * 1e3)
            busbw = algbw * (world - 1) / world
            print(f"{size},{busbw:.2f},{algbw:.2f},{us:.1f}")
            sys.stdout.flush()
        del send, recv, sources
        size *= 2

    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
