"""The pure perception pipeline: segment -> filter -> localise -> embed -> associate -> fuse.

    pipe = Pipeline.default()                   # depth-plane segmenter + ONNX crop embedder
    result = pipe.process(frame)                 # Frame in the map frame; updates pipe.map
    pipe.query("the yellow cube")                # [(MapObject, score), ...]

No rclpy here; the node (:mod:`rlstack_perception.node`) only converts messages.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from rlstack_perception.embed import LABELS, Embedder, TextEncoder
from rlstack_perception.frame import Frame
from rlstack_perception.localise import localise
from rlstack_perception.query_text import canonical_query
from rlstack_perception.segment import (
    DepthPlaneSegmenter,
    FilterConfig,
    Segment,
    Segmenter,
    filter_segments,
    height_above_support,
    support_levels,
)
from rlstack_perception.semantic_map import Detection, MapConfig, SemanticMapCore

BACKGROUND_TEXT = ("background clutter", "a background clutter", "furniture", "a wall", "the floor", "a table")


@dataclass
class FrameResult:
    detections: List[Detection]
    segments: List[Segment]
    kept: List[Segment]
    dropped: Dict[str, int]
    updated: int = 0
    added: int = 0
    timings_ms: Dict[str, float] = field(default_factory=dict)


class Pipeline:
    def __init__(self, segmenter: Segmenter, embedder: Embedder, text: TextEncoder,
                 map_config: Optional[MapConfig] = None, filter_config: Optional[FilterConfig] = None,
                 labels: Sequence[str] = LABELS, reject_background: bool = True,
                 max_range_m: float = 6.0, query_head=None, match_threshold: Optional[float] = None) -> None:
        """``query_head``: a :class:`~rlstack_perception.query_head.QueryHead` (MiniLM text space only)
        scoring queries against the map's labels (colour/shape compatibility, 0..1); None: cosine of the
        text embedding (the CLIP path). ``match_threshold``: queries return nothing scoring below it
        ("not here"); None = the head's calibrated threshold, or -1 (no threshold) without a head."""
        self.segmenter = segmenter
        self.embedder = embedder
        self.text = text
        self.filter_config = filter_config or FilterConfig()
        self.labels = list(labels)
        self.label_embeddings = text.prototypes(self.labels) if self.labels else None
        self.reject = text.prototypes(["background clutter"], BACKGROUND_TEXT) if reject_background else None
        self.max_range_m = max_range_m
        self.map = SemanticMapCore(map_config, self.labels, self.label_embeddings)
        if query_head is not None and not query_head.covers(self.labels):
            raise ValueError(f"the query head scores colour x shape labels of its vocabulary, not {self.labels}")
        self.query_head = query_head
        if match_threshold is None:
            match_threshold = query_head.threshold if query_head is not None else -1.0
        self.match_threshold = float(match_threshold)

    @classmethod
    def default(cls, weights: Optional[os.PathLike | str] = None, **kwargs) -> "Pipeline":
        """The packaged pipeline; ``weights``: a folder holding another ``crop_embedder.onnx`` and
        ``query_head.npz`` (with their cards), e.g. a retrained pair to evaluate before shipping it."""
        from rlstack_perception.embed import OnnxCropEmbedder
        from rlstack_perception.query_head import load_default

        folder = Path(weights) if weights else None
        kwargs.setdefault("query_head", load_default(folder / "query_head.npz" if folder else None))
        embedder = OnnxCropEmbedder(folder / "crop_embedder.onnx") if folder else OnnxCropEmbedder()
        kwargs.setdefault("labels", embedder.labels)   # what the packaged embedder was trained to name
        return cls(DepthPlaneSegmenter(), embedder, TextEncoder(), **kwargs)

    # ---------------------------------------------------------------- one frame
    def detect(self, frame: Frame) -> FrameResult:
        """Everything but the map update (raises FrameError for frames to skip)."""
        t = [time.perf_counter()]
        frame.validate()
        pts, valid = frame.points_world()
        levels = support_levels(pts, valid)
        _, base = height_above_support(pts, levels) if len(levels) else (None, None)
        t.append(time.perf_counter())
        if isinstance(self.segmenter, DepthPlaneSegmenter):
            segs = self.segmenter.segment(frame, pts, valid, levels)
        else:
            segs = self.segmenter.segment(frame, pts, valid)
        kept, dropped = filter_segments(segs, valid, self.filter_config)
        t.append(time.perf_counter())
        locs, masks = [], []
        dropped.setdefault("no_position", 0)
        dropped.setdefault("far", 0)
        for s in kept:
            d = frame.depth[s.mask]
            rng = float(np.nanmedian(np.where(d > 0, d, np.nan)))
            support = None
            if base is not None:
                b = base[s.mask]
                b = b[np.isfinite(b)]
                support = float(np.median(b)) if b.size else None
            loc = localise(pts[s.mask], frame.camera_position, support, pixel_size=rng / frame.fx)
            if loc is None:
                dropped["no_position"] += 1
                continue
            if loc.range_m > self.max_range_m:
                dropped["far"] += 1
                continue
            locs.append((s, loc))
            masks.append(s.mask)
        t.append(time.perf_counter())
        emb = self.embedder.embed(frame.rgb, masks)
        t.append(time.perf_counter())
        dets, keep = [], []
        dropped.setdefault("background", 0)
        for (s, loc), e in zip(locs, emb):
            if self.reject is not None and self.label_embeddings is not None:
                if float(np.max(self.reject @ e)) > float(np.max(self.label_embeddings @ e)):
                    dropped["background"] += 1
                    continue
            w = min(1.0, s.area / 150.0) / (1.0 + 0.5 * loc.range_m)
            dets.append(Detection(loc.centre, loc.size, e, w, frame.stamp))
            keep.append(s)
        names = ("geometry", "segment", "localise", "embed")
        timings = {n: 1000 * (b - a) for n, a, b in zip(names, t[:-1], t[1:])}
        return FrameResult(dets, segs, keep, dropped, timings_ms=timings)

    def process(self, frame: Frame) -> FrameResult:
        res = self.detect(frame)
        t0 = time.perf_counter()
        res.updated, res.added = self.map.update(res.detections)
        res.timings_ms["fuse"] = 1000 * (time.perf_counter() - t0)
        res.timings_ms["total"] = sum(res.timings_ms.values())
        return res

    def canonical_text(self, text: str) -> str:
        """The wording :meth:`query` embeds and scores: ``text`` in the form the query side reads best
        (:func:`~rlstack_perception.query_text.canonical_query`: "the can, the blue one" -> "the blue can";
        with the query head also "the cranberry cube" -> "the ruby cube")."""
        return self.query_head.canonical(text) if self.query_head is not None else canonical_query(text)

    def query(self, text: str, max_results: int = 0, min_score: float = -1.0, threshold: bool = True):
        """Ranked (MapObject, score) at or above ``max(min_score, match_threshold)``; [] = "not here".

        ``threshold=False`` ranks without ``match_threshold`` (evaluation of the ranking alone). ``text`` is
        asked as :meth:`canonical_text`."""
        text = self.canonical_text(text)
        e = self.text.encode([text])[0]
        floor = max(float(min_score), self.match_threshold) if threshold else float(min_score)
        if self.query_head is not None:
            return self.map.query(e, max_results, floor, self.query_head.label_scores(text, e, self.labels))
        return self.map.query(e, max_results, floor)
