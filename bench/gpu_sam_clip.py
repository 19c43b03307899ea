#!/usr/bin/env python3
"""Time SAM and CLIP with RANDOM weights on a GPU (or CPU): the cost of the model classes
the perception backends would run, without any checkpoint.

No weights exist on our machines and nothing may be downloaded, so this measures the
architectures as users would load them from their own checkpoints:

* SAM ViT-B / ViT-L / ViT-H image encoder on one 1024x1024 image (what SamPredictor.set_image
  runs per frame), and the prompt encoder + mask decoder for 32 point prompts;
* CLIP ViT-B/32 (open_clip) image tower on a batch of 224x224 object crops, and the text tower.

Each number is the median of ``--repeats`` timed runs after ``--warmup`` runs, synchronised.
It needs the real `segment_anything`, `open_clip` and torchvision (the GPU machine has
torchvision; carry the two pure-Python wheels). JSON on stdout, a markdown table on stderr.
Not part of `make bench` (which runs bench/bench_*.py on the project machine, where there is
no GPU and no torchvision); the CPU timings of the same backends are in bench_perception.py.

Usage::

    python bench/gpu_sam_clip.py [--device cuda] [--sam vit_b vit_l vit_h] [--dtype fp32|bf16]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def timed(fn, device: str, warmup: int, repeats: int) -> float:
    """Median wall time of ``fn()`` in ms, synchronising the device around each call."""
    import torch

    def sync():
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def precision(device: str, dtype):
    """fp32, or bf16 autocast (weights stay fp32: SAM's prompt encoder casts coordinates to
    float, so converting the whole model to bf16 fails)."""
    import contextlib

    import torch

    if dtype is torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device_type="cuda" if device.startswith("cuda") else "cpu", dtype=dtype)


def bench_sam(kind: str, device: str, dtype, warmup: int, repeats: int) -> dict:
    import torch
    from segment_anything import sam_model_registry

    sam = sam_model_registry[kind](checkpoint=None).to(device=device).eval()
    image = torch.randn(1, 3, 1024, 1024, device=device)
    points = torch.rand(32, 1, 2, device=device) * 1024
    labels = torch.ones(32, 1, device=device, dtype=torch.int)
    with torch.inference_mode(), precision(device, dtype):
        embedding = sam.image_encoder(image)

        def decode():
            sparse, dense = sam.prompt_encoder(points=(points, labels), boxes=None, masks=None)
            return sam.mask_decoder(image_embeddings=embedding, image_pe=sam.prompt_encoder.get_dense_pe(),
                                    sparse_prompt_embeddings=sparse, dense_prompt_embeddings=dense,
                                    multimask_output=True)

        encoder_ms = timed(lambda: sam.image_encoder(image), device, warmup, repeats)
        decoder_ms = timed(decode, device, warmup, repeats)
    params = sum(p.numel() for p in sam.parameters())
    return {"model": f"SAM {kind}", "params_M": round(params / 1e6, 1),
            "image_encoder_ms_1024px": round(encoder_ms, 2), "decoder_ms_32_points": round(decoder_ms, 2)}


def bench_clip(device: str, dtype, warmup: int, repeats: int, crops: int) -> dict:
    import open_clip
    import torch

    model = open_clip.create_model("ViT-B-32", pretrained=None).to(device=device).eval()
    tokenizer = open_clip.get_tokenizer("ViT-B-32")
    images = torch.randn(crops, 3, 224, 224, device=device)
    text = tokenizer(["a photo of the yellow cube"]).to(device)
    with torch.inference_mode(), precision(device, dtype):
        image_ms = timed(lambda: model.encode_image(images), device, warmup, repeats)
        text_ms = timed(lambda: model.encode_text(text), device, warmup, repeats)
    params = sum(p.numel() for p in model.parameters())
    return {"model": "CLIP ViT-B/32 (open_clip)", "params_M": round(params / 1e6, 1),
            f"image_ms_batch_{crops}_crops": round(image_ms, 2), "text_ms_one_query": round(text_ms, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32", help="bf16 = autocast, fp32 weights")
    parser.add_argument("--sam", nargs="*", default=["vit_b", "vit_l", "vit_h"])
    parser.add_argument("--crops", type=int, default=16, help="object crops per CLIP image batch")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()

    import torch

    torch.manual_seed(0)
    dtype = torch.float32 if args.dtype == "fp32" else torch.bfloat16
    device_name = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu"
    result = {"device": device_name, "dtype": args.dtype, "torch": torch.__version__,
              "weights": "random (no checkpoint)", "sam": [], "clip": None}
    for kind in args.sam:
        result["sam"].append(bench_sam(kind, args.device, dtype, args.warmup, args.repeats))
    result["clip"] = bench_clip(args.device, dtype, args.warmup, args.repeats, args.crops)
    print(json.dumps(result, indent=2))

    lines = [f"SAM / CLIP with random weights on {device_name} ({args.dtype}, torch {torch.__version__}; "
             f"median of {args.repeats} after {args.warmup} warm-up)", "",
             "| model | params (M) | per-frame encoder | prompts / text |", "|---|---|---|---|"]
    for r in result["sam"]:
        lines.append(f"| {r['model']} | {r['params_M']} | {r['image_encoder_ms_1024px']} ms (1024x1024) "
                     f"| {r['decoder_ms_32_points']} ms (32 point prompts) |")
    c = result["clip"]
    lines.append(f"| {c['model']} | {c['params_M']} | {c[f'image_ms_batch_{args.crops}_crops']} ms "
                 f"({args.crops} crops of 224x224) | {c['text_ms_one_query']} ms (one query) |")
    print("\n".join(lines), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
