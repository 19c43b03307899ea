"""Perception benchmark: map update rate on 320x240 PyBullet frames, segmenter and embedder timings.

    python bench/bench_perception.py [--quick]      # JSON on stdout, markdown table on stderr

Frames are rendered in-process (home, seeded viewpoints around objects) before timing, so
render time is excluded. SAM and CLIP: real checkpoints are not available here; with
--sam-checkpoint / --clip-checkpoint (and segment_anything / open_clip importable) they are
timed on the same frames, otherwise reported as null.
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
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--frames", type=int, default=48)
    ap.add_argument("--sam-checkpoint", default="")
    ap.add_argument("--sam-model-type", default="vit_b")
    ap.add_argument("--clip-checkpoint", default="")
    ap.add_argument("--clip-model", default="ViT-B-32")
    args = ap.parse_args(argv)
    n_frames = 12 if args.quick else args.frames

    from sim_bridges import make_backend

    from rlstack_perception import simtools as st
    from rlstack_perception.pipeline import Pipeline
    from rlstack_perception.segment import support_levels

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
    if args.sam_checkpoint:
        from rlstack_perception.backends.sam import SamSegmenter

        sam = SamSegmenter.from_checkpoint(args.sam_checkpoint, args.sam_model_type)
        result["sam_ms"] = med(timed(lambda: sam.segment(frames[0]), 3))
    if args.clip_checkpoint:
        from rlstack_perception.backends.clip import ClipEmbedder

        clip = ClipEmbedder.from_checkpoint(args.clip_checkpoint, args.clip_model)
        result["clip_ms_per_crop"] = med(timed(lambda: clip.embed(f.rgb, masks[:1]), 10))
    print(json.dumps(result, indent=1))
    rows = [(k, v) for k, v in result.items() if not isinstance(v, dict)]
    rows += [(f"stage {k} ms", v) for k, v in result["stage_ms_median"].items()]
    print("| metric | value |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows), file=sys.stderr)
    return 0


def Frame_from_head(sim):  # noqa: N802 - one head-camera frame as the robot sees it
    from rlstack_perception.frame import Frame

    return Frame.from_camera_frame(sim.camera_frame("head_camera"))


if __name__ == "__main__":
    sys.exit(main())
