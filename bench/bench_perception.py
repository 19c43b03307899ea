"""Perception benchmark: map update rate on 320x240 PyBullet frames, segmenter and embedder timings.

    python bench/bench_perception.py [--quick]      # JSON on stdout, markdown table on stderr

Frames are rendered in-process (home, seeded viewpoints around objects) before timing, so
render time is excluded. SAM and CLIP (segment_anything / open_clip, imported through the
scoped torchvision stand-in when torchvision is absent) are timed on the same frames with
--sam-checkpoint / --clip-checkpoint (user weights), or with random weights of the real
architectures via --sam-random vit_b|vit_l|vit_h / --clip-random ViT-B-32 (timing only: the
masks/embeddings are meaningless); otherwise reported as null.

    python bench/bench_perception.py --quick --sam-random vit_b --clip-random ViT-B-32
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def timed(fn, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(1000 * (time.perf_counter() - t0))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    from rlstack_common.results_record import add_record_argument, command_line, record
    add_record_argument(ap)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--frames", type=int, default=48)
    ap.add_argument("--sam-checkpoint", default="")
    ap.add_argument("--sam-model-type", default="vit_b")
    ap.add_argument("--clip-checkpoint", default="")
    ap.add_argument("--clip-model", default="ViT-B-32")
    ap.add_argument("--sam-random", default="", metavar="MODEL_TYPE",
                    help="time SAM with random weights of this segment_anything type (vit_b, vit_l, vit_h)")
    ap.add_argument("--sam-points-per-side", type=int, default=12, help="SamSegmenter prompt grid (n x n)")
    ap.add_argument("--sam-predictor", default="segment_anything", choices=("segment_anything", "torch"))
    ap.add_argument("--sam-repeats", type=int, default=1, help="SAM frames timed (each can take seconds on CPU)")
    ap.add_argument("--clip-random", default="", metavar="MODEL_NAME",
                    help="time CLIP with random weights of this open_clip architecture (e.g. ViT-B-32)")
    ap.add_argument("--torch-threads", type=int, default=0, help="torch intra-op threads for SAM/CLIP (0: default)")
    args = ap.parse_args(argv)
    n_frames = 12 if args.quick else args.frames

    from rlstack_perception import simtools as st
    from rlstack_perception.pipeline import Pipeline
    from rlstack_perception.segment import support_levels
    from sim_bridges import make_backend

    frames = []
    with make_backend("pybullet") as sim:
        sim.load_scene("home")
        sim.reset(seed=3000)
        rng = np.random.default_rng(0)
        for _name, eye, tgt in st.object_views(sim, rng, 4, (0.7, 2.2), (0.9, 1.45)):
            frames.append(st.render_view(sim, eye, tgt))
            if len(frames) >= n_frames:
                break
        frames.append(Frame_from_head(sim))
    t0 = time.perf_counter()
    pipe = Pipeline.default()
    startup_s = time.perf_counter() - t0
    for f in frames[:2]:  # warm-up
        pipe.process(f)
    pipe.map.clear()
    totals, parts, n_det = [], {}, []
    for f in frames:
        res = pipe.process(f)
        totals.append(res.timings_ms["total"])
        n_det.append(len(res.detections))
        for k, v in res.timings_ms.items():
            parts.setdefault(k, []).append(v)
    # segmenter alone (geometry + support planes + components), embedder per crop
    seg_ms = []
    for f in frames:
        pts, valid = f.points_world()
        t1 = time.perf_counter()
        pipe.segmenter.segment(f, pts, valid, support_levels(pts, valid))
        seg_ms.append(1000 * (time.perf_counter() - t1))
    f = frames[0]
    res = pipe.detect(f)
    masks = [s.mask for s in res.kept] or [np.ones(f.depth.shape, bool)]
    emb_one = timed(lambda: pipe.embedder.embed(f.rgb, masks[:1]), 30)
    text_new = timed(lambda: pipe.text.encode([f"the thing number {time.perf_counter()}"]), 5)
    text_cached = timed(lambda: pipe.text.encode(["the yellow cube"]), 20)
    query_ms = timed(lambda: pipe.query("the yellow cube"), 20)

    def med(v):
        return round(float(np.median(v)), 3)

    result = {
        "frames": len(frames), "resolution": "320x240", "detections_per_frame": med(n_det),
        "map_update_ms_median": med(totals), "map_update_ms_p95": round(float(np.percentile(totals, 95)), 3),
        "map_update_hz": round(1000.0 / float(np.median(totals)), 1),
        "stage_ms_median": {k: med(v) for k, v in parts.items()},
        "segmenter_depth_plane_ms_median": med(seg_ms),
        "embedder_crop_cnn_ms_per_crop": med(emb_one),
        "text_query_embedding_ms_uncached": med(text_new), "text_query_embedding_ms_cached": med(text_cached),
        "query_ms_cached": med(query_ms), "pipeline_startup_s": round(startup_s, 2),
        "sam_ms": None, "clip_ms_per_crop": None,
    }
    if args.torch_threads and (args.sam_checkpoint or args.sam_random or args.clip_checkpoint or args.clip_random):
        import torch

        torch.set_num_threads(args.torch_threads)
    if args.sam_checkpoint or args.sam_random:
        import torch

        from rlstack_perception.backends.sam import SamSegmenter, build_sam

        t1 = time.perf_counter()
        sam_model = build_sam(args.sam_model_type if args.sam_checkpoint else args.sam_random, args.sam_checkpoint)
        build_s = time.perf_counter() - t1
        sam = SamSegmenter.from_model(sam_model, predictor=args.sam_predictor,
                                      points_per_side=args.sam_points_per_side)
        enc = timed(lambda: sam.predictor.set_image(frames[0].rgb), 1)  # image encoder + resize/pad, once
        h, w = frames[0].rgb.shape[:2]
        dec = timed(lambda: sam.predictor.predict(np.array([[w / 2, h / 2]]), np.array([1]), multimask_output=True,
                                                  return_logits=True), 5)
        n_masks = []
        full = timed(lambda: n_masks.append(len(sam.segment(frames[0]))), max(1, args.sam_repeats))
        result["sam"] = {"weights": "checkpoint" if args.sam_checkpoint else f"random {args.sam_random}",
                         "params_M": round(sum(p.numel() for p in sam_model.parameters()) / 1e6, 1),
                         "predictor": args.sam_predictor, "torch_threads": torch.get_num_threads(),
                         "build_s": round(build_s, 2), "image_encoder_ms": med(enc),
                         "decode_ms_per_point": med(dec), "points": args.sam_points_per_side ** 2,
                         "frame_ms": med(full), "frames_timed": len(full), "masks": n_masks[-1]}
        result["sam_ms"] = med(full)
    if args.clip_checkpoint or args.clip_random:
        import torch

        from rlstack_perception.backends.clip import ClipEmbedder, build_clip

        t1 = time.perf_counter()
        if args.clip_checkpoint:
            clip = ClipEmbedder.from_checkpoint(args.clip_checkpoint, args.clip_model,
                                                threads=args.torch_threads or torch.get_num_threads())
        else:
            clip = ClipEmbedder.from_open_clip(*build_clip(args.clip_random),
                                               threads=args.torch_threads or torch.get_num_threads())
        build_s = time.perf_counter() - t1
        crops8 = (masks * 8)[:8]
        clip.embed(f.rgb, masks[:1])  # warm-up
        result["clip"] = {"weights": "checkpoint" if args.clip_checkpoint else f"random {args.clip_random}",
                          "params_M": round(sum(p.numel() for p in clip.model.parameters()) / 1e6, 1),
                          "image_size": clip.image_size, "torch_threads": torch.get_num_threads(),
                          "build_s": round(build_s, 2),
                          "ms_per_crop_batch1": med(timed(lambda: clip.embed(f.rgb, masks[:1]), 10)),
                          "ms_per_crop_batch8": round(med(timed(lambda: clip.embed(f.rgb, crops8), 5)) / 8, 3),
                          "text_ms": med(timed(lambda: clip.encode_text(["the yellow cube"]), 10))}
        result["clip_ms_per_crop"] = result["clip"]["ms_per_crop_batch1"]
    print(json.dumps(result, indent=1))
    if args.record:
        record(args.record, result, command=command_line())
    rows = [(k, v) for k, v in result.items() if not isinstance(v, dict)]
    rows += [(f"stage {k} ms", v) for k, v in result["stage_ms_median"].items()]
    for part in ("sam", "clip"):
        rows += [(f"{part} {k}", v) for k, v in result.get(part, {}).items()]
    print("| metric | value |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows), file=sys.stderr)
    return 0


def Frame_from_head(sim):  # noqa: N802 - one head-camera frame as the robot sees it
    from rlstack_perception.frame import Frame

    return Frame.from_camera_frame(sim.camera_frame("head_camera"))


if __name__ == "__main__":
    sys.exit(main())
