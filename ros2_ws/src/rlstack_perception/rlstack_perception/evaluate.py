"""In-process evaluation of the perception pipeline on seeded PyBullet layouts.

    python -m rlstack_perception.evaluate [--layouts 5] [--views 3] [--json out/perception/eval.json]

For each scene (home, panda_table) and layout seed (disjoint from the embedder's training
seeds) a fresh map is built from seeded viewpoints around the objects (0.7-2.2 m away,
mast-like heights). Reported:

* segmentation: IoU of the best predicted mask with each ground-truth object mask
  (objects with >= 30 visible pixels), frame by frame;
* localisation: per-observation centre error (ours and the naive visible-surface centroid),
  and the fused map's centre error per object (median, p95);
* retrieval top-1: for every object and wording (trained and unseen), the best map entry
  must lie at that object (within 10 cm of its true centre and nearer to it than to any other
  object; a duplicate entry of the same object counts as right);
* held-out wordings (``wordings/heldout.json``, never trained on): per column (colour synonyms,
  paraphrases, both combined, category words) top-1 as the user gets it (the best match above the
  match threshold lies at an object whose label the query accepts) and of the ranking alone (no
  threshold); ``mission``: right and scoring >= 0.85 (the fetch mission's ``min_match_score``);
* absent queries (held-out column ``absent``, plus trained wordings of labels not in the scene):
  false-match rate = any match returned above the threshold;
* rate: pipeline time per 320x240 frame (median; Hz = 1000 / ms).

JSON on stdout, a markdown table on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from rlstack_common.results_record import add_record_argument, command_line, record
from rlstack_perception.noun_words import NOUN_RULE_MODES
from rlstack_perception.semantic_map import FORMAT as MAP_FORMAT
from rlstack_perception.wordings import UNSEEN_SHAPE_WORDS

TRAINED_TEMPLATES = ("{c} {s}", "the {c} {s}")
UNSEEN_TEMPLATES = ("the {c} {w}", "a {c} {w}", "where is the {c} {w}?", "bring me the {c} {w}")


def wordings(label: str):
    c, s = label.split()
    trained = [t.format(c=c, s=s) for t in TRAINED_TEMPLATES]
    unseen = [t.format(c=c, w=w) for w in UNSEEN_SHAPE_WORDS.get(s, (s,)) for t in UNSEEN_TEMPLATES]
    unseen = [u for u in unseen if u not in trained]
    return trained, unseen


def pct(values, q):
    return float(np.percentile(values, q)) if len(values) else float("nan")


def _prepared(pipe):
    """Every query is asked in every layout: embed them once, in batches (one at a time it took ~60 ms
    each, and the pipeline's 4096-entry cache would have been cleared between layouts)."""
    from rlstack_perception import wordings as W

    pipe.text.cache_size = max(pipe.text.cache_size, 100_000)
    asked = [q.text for q in W.all_heldout_queries()]
    for lab in pipe.labels:
        asked += [t.format(c=lab.split()[0], s=lab.split()[1]) for t in ("{c} {s}", "the {c} {s}")]
        asked += sum(wordings(lab), [])
    asked = list(dict.fromkeys(pipe.canonical_text(t) for t in asked))   # what pipe.query embeds
    for i in range(0, len(asked), 256):
        pipe.text.encode(asked[i:i + 256])
    return pipe


def score_queries(pipe, truth, hits, confident, held) -> None:
    """Ask every query of one layout's map (``pipe.map``) and count the answers into ``hits``,
    ``confident`` and ``held``. ``truth``: object name -> (label, true centre)."""
    from rlstack_perception import wordings as W

    def nearest(position):
        dd = {k: float(np.linalg.norm(p - position)) for k, (_lab, p) in truth.items()}
        k = min(dd, key=dd.get)
        return k, dd[k]

    for name, (label, _p) in truth.items():
        trained, unseen = wordings(label)
        for kind, texts in (("trained", trained), ("unseen", unseen)):
            for text in texts:
                top = pipe.query(text, max_results=1)
                ok = False
                if top:  # the answer is where this object is (a duplicate entry of it counts)
                    k, d = nearest(top[0][0].position)
                    ok = k == name and d < 0.10
                hits[kind][0] += int(ok)
                confident[kind] += int(ok and top[0][1] >= 0.85)
                hits[kind][1] += 1
    present = {lab for lab, _p in truth.values()}

    def label_at(entry):
        k, d = nearest(entry.position)
        return truth[k][0] if d < 0.10 else None

    # held-out queries naming labels this layout lacks ("the blue duck" in home) are "not
    # here" queries too: column absent_in_scene
    queries = [q if W.is_absent(q.column) or set(q.labels) & present else
               W.Query(q.text, "absent_in_scene", (), ()) for q in W.all_heldout_queries()]
    queries += [W.Query(t.format(c=lab.split()[0], s=lab.split()[1]), "absent_labels", (), ())
                for lab in pipe.labels if lab not in present for t in ("{c} {s}", "the {c} {s}")]
    for q in queries:
        top = pipe.query(q.text, max_results=1)
        cell = held.setdefault(q.column, {"n": 0, "ok": 0, "ranking_ok": 0, "mission_ok": 0})
        cell["n"] += 1
        if W.is_absent(q.column):
            cell["ok"] += int(bool(top))          # a false match
            cell["mission_ok"] += int(bool(top) and top[0][1] >= 0.85)
            continue
        ok = bool(top) and label_at(top[0][0]) in q.labels
        cell["ok"] += int(ok)
        cell["mission_ok"] += int(ok and top[0][1] >= 0.85)
        rank = pipe.query(q.text, max_results=1, threshold=False)
        cell["ranking_ok"] += int(bool(rank) and label_at(rank[0][0]) in q.labels)


def query_metrics(pipe, hits, confident, held) -> dict:
    from rlstack_perception import wordings as W

    return {
        "retrieval_top1_trained": hits["trained"][0] / max(1, hits["trained"][1]),
        "retrieval_top1_unseen": hits["unseen"][0] / max(1, hits["unseen"][1]),
        "retrieval_top1_trained_mission_0.85": confident["trained"] / max(1, hits["trained"][1]),
        "retrieval_top1_unseen_mission_0.85": confident["unseen"] / max(1, hits["unseen"][1]),
        "queries": hits["trained"][1] + hits["unseen"][1],
        "match_threshold": float(pipe.match_threshold),
        **{f"heldout_{col}_top1": c["ok"] / max(1, c["n"]) for col, c in held.items() if not W.is_absent(col)},
        **{f"heldout_{col}_top1_ranking": c["ranking_ok"] / max(1, c["n"]) for col, c in held.items()
           if not W.is_absent(col)},
        **{f"heldout_{col}_mission_0.85": c["mission_ok"] / max(1, c["n"]) for col, c in held.items()
           if not W.is_absent(col)},
        **{f"{col}_false_match_rate": c["ok"] / max(1, c["n"]) for col, c in held.items() if W.is_absent(col)},
        **{f"{col}_false_match_rate_mission_0.85": c["mission_ok"] / max(1, c["n"]) for col, c in held.items()
           if W.is_absent(col)},
        **{f"n_queries_{col}": c["n"] for col, c in held.items()},
    }


def rescore(maps_dir, pipeline_factory=None) -> dict:
    """The query metrics of :func:`evaluate` again, on maps it saved (``save_maps``), with this
    pipeline's query side (query head, threshold, map scoring): no rendering, seconds not minutes.
    The map entries keep the embeddings of the embedder that built them."""
    from rlstack_perception.pipeline import Pipeline

    pipe = _prepared((pipeline_factory or Pipeline.default)())
    per_scene = {}
    for f in sorted(Path(maps_dir).glob("*.json")):
        doc = json.loads(f.read_text())
        if not isinstance(doc, dict) or "scene" not in doc or "truth" not in doc:
            continue   # not a saved map (e.g. the evaluation's own --json written into the same folder)
        acc = per_scene.setdefault(doc["scene"], ({"trained": [0, 0], "unseen": [0, 0]},
                                                  {"trained": 0, "unseen": 0}, {}, []))
        pipe.map.load(f)
        truth = {k: (lab, np.asarray(p, float)) for k, (lab, p) in doc["truth"].items()}
        score_queries(pipe, truth, *acc[:3])
        acc[3].append(doc["seed"])
    return {scene: {"layouts": seeds, **query_metrics(pipe, hits, conf, held)}
            for scene, (hits, conf, held, seeds) in per_scene.items()}


def evaluate(layouts=(2000, 2001, 2002, 2003, 2004), views: int = 3, scenes=("home", "panda_table"),
             pipeline_factory=None, log=lambda *a: print(*a, file=sys.stderr), depth_noise=None,
             save_maps: str = ""):
    """``depth_noise``: a ``sim_bridges.sensor_noise.DepthNoise`` applied to every rendered view (and
    its RGB when the model has ``rgb_sigma``), as the bridge does in the fetch graph; None: exact depth.
    Ground-truth masks come from the exact depth, so segmentation IoU counts what the noise costs.
    ``save_maps``: a folder; each layout's map and the objects' true labels and centres are written
    there (``{scene}_{seed}.json``), so :func:`rescore` can ask the queries again without rendering."""
    from rlstack_perception import simtools as st
    from rlstack_perception.localise import surface_centroid
    from rlstack_perception.pipeline import Pipeline
    from sim_bridges import make_backend

    pipe = _prepared((pipeline_factory or Pipeline.default)())
    results = {}
    with make_backend("pybullet") as sim:
        for scene in scenes:
            sim.load_scene(scene)
            ious, obs_err, naive_err, map_err, ms = [], [], [], [], []
            hits = {"trained": [0, 0], "unseen": [0, 0]}
            confident = {"trained": 0, "unseen": 0}   # right and scoring the fetch's min_match_score (0.85)
            held = {}
            spurious, n_entries, missing = 0, 0, 0
            rng = np.random.default_rng(7)
            noise_rng = np.random.default_rng(11)   # its own stream: the viewpoints stay those of exact depth
            for seed in layouts:
                sim.reset(seed=int(seed))
                pipe.map.clear()
                objs = st.target_objects(sim)
                dist = (0.7, 2.2) if scene == "home" else (0.5, 1.2)
                height = (0.9, 1.45) if scene == "home" else (0.7, 1.2)
                for _name, eye, tgt in st.object_views(sim, rng, views, dist, height, scene=scene):
                    f = st.render_view(sim, eye, tgt)
                    gms = st.gt_masks(f, objs, 30)
                    pts, _ = f.points_world()
                    if depth_noise is not None:
                        f.depth, f.rgb = depth_noise.apply(f.depth, f.fx, f.fy, f.cx, f.cy, noise_rng, f.rgb)
                    t0 = time.perf_counter()
                    res = pipe.process(f)
                    ms.append(1000 * (time.perf_counter() - t0))
                    for gname, gm in gms.items():
                        best = max(res.segments, key=lambda s: (s.mask & gm).sum() / (s.mask | gm).sum(), default=None)
                        iou = 0.0 if best is None else float((best.mask & gm).sum() / (best.mask | gm).sum())
                        ious.append(iou)
                    truth = np.array([o.pose.position for o in objs.values()])
                    for s, d in zip(res.kept, res.detections):
                        k = int(np.argmin(np.linalg.norm(truth - d.position, axis=1)))
                        gm = gms.get(list(objs)[k])
                        if gm is not None and (s.mask & gm).sum() / (s.mask | gm).sum() > 0.5:
                            obs_err.append(float(np.linalg.norm(d.position - truth[k])))
                            naive_err.append(float(np.linalg.norm(surface_centroid(pts[s.mask]) - truth[k])))
                entries = pipe.map.snapshot()
                n_entries += len(entries)
                pos = np.array([e.position for e in entries]) if entries else np.zeros((0, 3))
                for name, o in objs.items():
                    if not len(pos):
                        missing += 1
                        continue
                    dd = np.linalg.norm(pos - np.asarray(o.pose.position), axis=1)
                    k = int(np.argmin(dd))
                    if dd[k] < 0.10:
                        map_err.append(float(dd[k]))
                    else:
                        missing += 1
                near_any = [e for e in entries if min(np.linalg.norm(np.asarray(o.pose.position) - e.position)
                                                      for o in objs.values()) >= 0.10]
                spurious += len(near_any)
                truth = {name: (st.label_of(o), np.asarray(o.pose.position, float)) for name, o in objs.items()}
                score_queries(pipe, truth, hits, confident, held)
                if save_maps:   # the map's own file format, with the truth beside it
                    Path(save_maps).mkdir(parents=True, exist_ok=True)
                    doc = {"format": MAP_FORMAT, "frame_id": "map", "objects": [e.to_json() for e in entries],
                           "scene": scene, "seed": int(seed),
                           "truth": {k: [lab, p.tolist()] for k, (lab, p) in truth.items()}}
                    (Path(save_maps) / f"{scene}_{seed}.json").write_text(json.dumps(doc))
                log(f"[eval] {scene} layout {seed}: {len(entries)} entries, frames so far {len(ms)}")
            results[scene] = {
                "layouts": list(layouts), "frames": len(ms),
                "seg_iou_mean": float(np.mean(ious)), "seg_iou_median": float(np.median(ious)),
                "seg_iou_ge_0.5": float(np.mean(np.array(ious) >= 0.5)), "gt_objects_in_frames": len(ious),
                "obs_err_median_m": pct(obs_err, 50), "obs_err_p95_m": pct(obs_err, 95),
                "naive_centroid_err_median_m": pct(naive_err, 50), "naive_centroid_err_p95_m": pct(naive_err, 95),
                "map_err_median_m": pct(map_err, 50), "map_err_p95_m": pct(map_err, 95),
                "objects_mapped": len(map_err), "objects_missing": missing, "spurious_entries": spurious,
                "map_entries": n_entries, "duplicate_entries": n_entries - len(map_err) - spurious,
                **query_metrics(pipe, hits, confident, held),
                "pipeline_ms_median": pct(ms, 50), "pipeline_ms_p95": pct(ms, 95),
            }
    return results


def markdown(results) -> str:
    keys = list(dict.fromkeys(k for r in results.values() for k in r))
    keys = [k for k in keys if k != "layouts"]
    lines = ["| metric | " + " | ".join(results) + " |", "|---|" + "---|" * len(results)]
    for k in keys:
        cells = []
        for r in results.values():
            v = r.get(k, "-")
            cells.append(f"{v:.4f}" if isinstance(v, float) else str(v))
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def make_factory(args):
    """The pipeline the evaluation runs: the default one, or CLIP from a user checkpoint (no download)."""
    from rlstack_perception.embed import ALL_LABELS, TextEncoder
    from rlstack_perception.pipeline import Pipeline
    from rlstack_perception.segment import DepthPlaneSegmenter
    from rlstack_perception.semantic_map import MapConfig

    if args.embedder == "clip":
        def clip_pipeline():
            from rlstack_perception.backends.clip import ClipEmbedder

            cfg = args.clip_model if args.clip_model.endswith(".json") else None
            name = Path(cfg).stem if cfg else args.clip_model
            emb = ClipEmbedder.from_checkpoint(args.clip_checkpoint, name, model_config=cfg, threads=args.threads)
            return Pipeline(DepthPlaneSegmenter(), emb, TextEncoder(emb.encode_text), labels=ALL_LABELS,
                            match_threshold=args.match_threshold)
        return clip_pipeline
    cfg = MapConfig(snap_temperature=args.snap_temperature) if args.snap_temperature is not None else None
    if not args.no_query_head and (args.noun_words is not None or args.no_shape_words):
        def rules_pipeline():
            from rlstack_perception.query_head import DEFAULT_QUERY_HEAD, load_default

            nouns = {} if args.noun_words is None else {"noun_words": args.noun_words}
            head = load_default(Path(args.weights) / "query_head.npz" if args.weights else DEFAULT_QUERY_HEAD,
                                shape_words=not args.no_shape_words, **nouns)
            return Pipeline.default(args.weights, query_head=head, match_threshold=args.match_threshold,
                                    map_config=cfg)
        return rules_pipeline
    if args.no_query_head:
        return lambda: Pipeline.default(args.weights, query_head=None, match_threshold=args.match_threshold,
                                        map_config=cfg)
    return lambda: Pipeline.default(args.weights, match_threshold=args.match_threshold, map_config=cfg)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Evaluate the perception pipeline in-process on PyBullet.")
    ap.add_argument("--layouts", type=int, default=5)
    ap.add_argument("--first-layout", type=int, default=2000)
    ap.add_argument("--views", type=int, default=3)
    ap.add_argument("--scenes", default="home,panda_table")
    ap.add_argument("--json", default="")
    add_record_argument(ap)
    ap.add_argument("--embedder", choices=("crop_cnn", "clip"), default="crop_cnn")
    ap.add_argument("--no-query-head", action="store_true", help="crop_cnn: cosine queries (the old query side)")
    ap.add_argument("--noun-words", nargs="?", const="full", default=None, choices=("off",) + NOUN_RULE_MODES,
                    help="query head's WordNet noun rule (rlstack_perception.noun_words): off; accept (a head noun "
                         "the table grounds accepts its kind); reject (a head noun that is not one of ours accepts "
                         "none); heads (both); full (both, and kinds named only by modifiers are not accepted); "
                         "alone: full; not given: the packaged head's default (heads)")
    ap.add_argument("--no-shape-words", action="store_true", help="query head without the WordNet shape table")
    ap.add_argument("--clip-checkpoint", default="", help="open_clip checkpoint (embedder clip)")
    ap.add_argument("--clip-model", default="ViT-B-32", help="open_clip model name or a .json model config")
    ap.add_argument("--match-threshold", type=float, default=None,
                    help="no match below this score (default: the query head's calibrated one; none for clip)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--depth-noise", action="store_true",
                    help="the bridge's RGB-D depth noise model on every view (the fetch graph's default)")
    ap.add_argument("--weights", default=None,
                    help="crop_cnn: a folder with another crop_embedder.onnx + query_head.npz "
                         "(default: the packaged pair)")
    ap.add_argument("--snap-temperature", type=float, default=None, help="the map's snap_temperature (default 200)")
    ap.add_argument("--save-maps", default="", help="write each layout's map and true objects into this folder")
    ap.add_argument("--rescore", default="",
                    help="no rendering: ask the queries again on the maps --save-maps wrote into this folder")
    args = ap.parse_args(argv)
    if args.rescore:
        res = rescore(args.rescore, pipeline_factory=make_factory(args))
        print(json.dumps(res, indent=1))
        print(markdown(res), file=sys.stderr)
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps(res, indent=1) + "\n")
        if args.record:
            record(args.record, res, command=command_line("rlstack_perception.evaluate"))
        return 0
    layouts = tuple(range(args.first_layout, args.first_layout + args.layouts))
    noise = None
    if args.depth_noise:
        from sim_bridges.sensor_noise import DepthNoise
        noise = DepthNoise()
    res = evaluate(layouts, args.views, tuple(args.scenes.split(",")), pipeline_factory=make_factory(args),
                   depth_noise=noise, save_maps=args.save_maps)
    text = json.dumps(res, indent=1)
    print(text)
    print(markdown(res), file=sys.stderr)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text + "\n")
    if args.record:
        record(args.record, res, command=command_line("rlstack_perception.evaluate"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
