"""The semantic map: a dictionary of objects keyed by appearance embedding.

Association: a detection updates the best entry whose embedding similarity is at least
``sim_threshold`` *and* whose position is within ``gate_m`` (spatial gate). A detection that passes
no entry's threshold but lies within ``merge_m`` (3-D centre distance) of an entry of its colour
(the colour word of the entry's label and of the detection's own best label) updates the nearest
such entry: a poor view of a known object (far, small, half hidden) is one more look at it, not a
new object. Otherwise the detection adds an entry. Fusion: the position is a running mean weighted
by each observation's weight (closer, larger views weigh more), the embedding a running unit mean;
``observations`` counts fused frames and ``confidence`` = 1 - exp(-sum of weights / 3) (0..1).
Consolidation: after each update, an updated or added entry closer than ``merge_m`` to another of
its colour is merged into the one with more evidence (larger weight), which keeps its id: entries
move as evidence accrues, so two entries started apart can converge on one object. Entries of
different colours, or without a colour (no label), are never merged; ``merge_m`` = 0 turns both
rules off. The colour words are :data:`rlstack_perception.embed.COLOURS`; without label
prototypes nothing has a colour and association is by similarity alone.
Queries rank entries by cosine similarity of a text embedding to their embedding.
Save/load are atomic (temp file + fsync + rename); a corrupt file is moved aside
(``<name>.corrupt-<time>``) and reported, never half-read.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from rlstack_common import atomic
from rlstack_perception.embed import COLOURS

FORMAT = "rlstack_semantic_map/1"


@dataclass
class Detection:
    position: np.ndarray
    size: np.ndarray
    embedding: np.ndarray
    weight: float = 1.0
    stamp: float = 0.0


@dataclass
class MapObject:
    id: int
    position: np.ndarray
    size: np.ndarray
    embedding: np.ndarray
    weight: float = 0.0
    observations: int = 0
    last_seen: float = 0.0
    label: str = ""
    label_score: float = 0.0

    @property
    def confidence(self) -> float:
        return float(1.0 - math.exp(-self.weight / 3.0))

    def to_json(self) -> dict:
        return {"id": self.id, "position": self.position.tolist(), "size": self.size.tolist(),
                "embedding": self.embedding.tolist(), "weight": self.weight, "observations": self.observations,
                "last_seen": self.last_seen, "label": self.label, "label_score": self.label_score}

    @classmethod
    def from_json(cls, d: dict) -> "MapObject":
        obj = cls(int(d["id"]), np.asarray(d["position"], float), np.asarray(d["size"], float),
                  np.asarray(d["embedding"], np.float32), float(d["weight"]), int(d["observations"]),
                  float(d["last_seen"]), str(d.get("label", "")), float(d.get("label_score", 0.0)))
        if obj.position.shape != (3,) or obj.size.shape != (3,) or obj.embedding.ndim != 1:
            raise ValueError(f"object {obj.id}: bad shapes")
        if not (np.all(np.isfinite(obj.position)) and np.all(np.isfinite(obj.embedding))):
            raise ValueError(f"object {obj.id}: non-finite values")
        return obj


class CorruptMapFile(ValueError):
    def __init__(self, path: Path, moved_to: Path, reason: str) -> None:
        super().__init__(f"corrupt map file {path}: {reason}; moved aside to {moved_to}")
        self.path, self.moved_to, self.reason = path, moved_to, reason


@dataclass
class MapConfig:
    sim_threshold: float = 0.75   # cosine similarity to update an entry
    gate_m: float = 0.25          # spatial gate (centre distance) for association
    max_objects: int = 500
    label_min_score: float = 0.5  # below this similarity to every label, the label is ""
    snap_temperature: float = 200.0  # queries see embeddings pulled onto the label prototypes (0: raw)
    colocated_m: float = 0.03     # label queries: entries closer than this answer once, as the best-observed one
    # one colour and closer than this: one object (the detection fuses in, entries merge); 0: off. The home
    # scenes' objects are ~5 cm; their centres are >= 0.15 m apart in home and >= ~0.13 m in home_kinds
    # (6 cm clear between footprints), so 0.10 m joins the looks of one object and leaves a margin of
    # 3 cm or more for the entries' position errors before two objects of one colour would join
    merge_m: float = 0.10

    def __post_init__(self) -> None:
        if not (math.isfinite(self.merge_m) and self.merge_m >= 0.0):
            raise ValueError(f"merge_m must be finite and >= 0, got {self.merge_m}")


def colour_word(label: str) -> Optional[str]:
    """The first colour word of :data:`~rlstack_perception.embed.COLOURS` in ``label`` (None if none)."""
    return next((w for w in str(label).lower().split() if w in COLOURS), None)


def _blend(obj: MapObject, w0: float, position: np.ndarray, size: np.ndarray, embedding: np.ndarray,
           w: float) -> None:
    """Move ``obj``'s position, size and (unit) embedding to their means weighted ``w0`` (the entry's) and
    ``w`` (the new evidence's): a detection's fusion and an entry's merge alike."""
    a = w / (w0 + w)
    obj.position = obj.position + a * (position - obj.position)
    obj.size = obj.size + a * (size - obj.size)
    e = w0 * obj.embedding + w * embedding
    obj.embedding = (e / max(np.linalg.norm(e), 1e-12)).astype(np.float32)


class SemanticMapCore:
    """Thread-safe map (the node's timer and service callbacks may interleave)."""

    def __init__(self, config: Optional[MapConfig] = None, labels: Sequence[str] = (),
                 label_embeddings: Optional[np.ndarray] = None) -> None:
        self.config = config or MapConfig()
        self.objects: Dict[int, MapObject] = {}
        self._next_id = 1
        self._lock = threading.RLock()
        self.labels = list(labels)
        self.label_embeddings = label_embeddings
        self.dropped_full = 0
        self.merged = 0    # entries merged into another one since start (:meth:`consolidate`)

    def __len__(self) -> int:
        return len(self.objects)

    # ---------------------------------------------------------------- association + fusion
    def associate(self, det: Detection) -> Optional[MapObject]:
        """The entry ``det`` updates: the most similar one (>= ``sim_threshold``) within ``gate_m``;
        else the nearest one of its colour within ``merge_m``; else None (a new entry)."""
        best, best_sim = None, -1.0
        for obj in self.objects.values():
            if np.linalg.norm(obj.position - det.position) > self.config.gate_m:
                continue
            sim = float(obj.embedding @ det.embedding)
            if sim >= self.config.sim_threshold and sim > best_sim:
                best, best_sim = obj, sim
        if best is None and self.config.merge_m > 0:
            # a view too poor to pass the similarity test (its shape reads wrong) but of the right
            # colour, on top of an entry: the same object. A new entry here would hold only such
            # views (a wrong name) and keep their evidence from the entry that has the object right
            colour = self._colour_of(det.embedding)
            if colour is not None:
                best = self._nearest_of_colour(det.position, colour)
        return best

    def _colour_of(self, embedding: np.ndarray) -> Optional[str]:
        """The colour word of the best label of ``embedding`` (None without prototypes, or below
        ``label_min_score``: no name, so no colour to trust)."""
        if self.label_embeddings is None or not self.labels:
            return None
        sims = self.label_embeddings @ embedding
        k = int(np.argmax(sims))
        return colour_word(self.labels[k]) if sims[k] >= self.config.label_min_score else None

    def _nearest_of_colour(self, position: np.ndarray, colour: str, exclude: int = -1) -> Optional[MapObject]:
        """The nearest entry (not ``exclude``) closer than ``merge_m`` whose label has ``colour``."""
        best, best_d = None, self.config.merge_m
        for obj in self.objects.values():
            if obj.id == exclude or colour_word(obj.label) != colour:
                continue
            d = float(np.linalg.norm(obj.position - position))
            if d < best_d:
                best, best_d = obj, d
        return best

    def update(self, detections: Sequence[Detection]) -> Tuple[int, int]:
        """Fuse one frame's detections; return (updated, added). One entry takes one detection.
        Then the entries touched are consolidated (:meth:`consolidate`), so ``len(self)`` may grow by
        less than ``added``."""
        updated = added = 0
        with self._lock:
            taken = set()
            for det in sorted(detections, key=lambda d: -d.weight):
                obj = self.associate(det)
                if obj is not None and obj.id in taken:
                    obj = None if self._has_room() else obj
                if obj is None:
                    if not self._has_room():
                        self.dropped_full += 1
                        continue
                    obj = MapObject(self._next_id, det.position.astype(float).copy(), det.size.astype(float).copy(),
                                    det.embedding.astype(np.float32).copy())
                    self.objects[obj.id] = obj
                    self._next_id += 1
                    added += 1
                else:
                    updated += 1
                self._fuse(obj, det)
                taken.add(obj.id)
            self.consolidate(taken)
        return updated, added

    def consolidate(self, ids: Optional[Sequence[int]] = None) -> int:
        """Merge each entry of ``ids`` (None: all) closer than ``merge_m`` to another entry of its colour
        into the one with more evidence; return the number of entries merged away.

        Only an entry that moved or was relabelled can have come near another one, so :meth:`update`
        passes the ids it touched. A survivor moves and may be relabelled, so it is checked again. The
        survivor keeps its id; the merged-away id is gone (as after :meth:`forget`)."""
        if self.config.merge_m <= 0:
            return 0
        merged = 0
        with self._lock:
            work = list(self.objects) if ids is None else [i for i in ids if i in self.objects]
            while work:
                a = self.objects.get(work.pop())
                colour = None if a is None else colour_word(a.label)
                if colour is None:
                    continue
                b = self._nearest_of_colour(a.position, colour, exclude=a.id)
                if b is None:
                    continue
                keep, gone = (a, b) if (a.weight, -a.id) >= (b.weight, -b.id) else (b, a)
                self._absorb(keep, gone)
                del self.objects[gone.id]
                merged += 1
                work.append(keep.id)
            self.merged += merged
        return merged

    def _absorb(self, keep: MapObject, gone: MapObject) -> None:
        """Fold ``gone``'s evidence into ``keep`` as :meth:`_fuse` folds a detection: position, size and
        embedding are means weighted by the evidence weights, weights and observations add up."""
        _blend(keep, max(keep.weight, 1e-3), gone.position, gone.size, gone.embedding, max(gone.weight, 1e-3))
        keep.weight = keep.weight + gone.weight
        keep.observations += gone.observations
        keep.last_seen = max(keep.last_seen, gone.last_seen)
        self._relabel(keep)

    def _has_room(self) -> bool:
        return len(self.objects) < self.config.max_objects

    def _fuse(self, obj: MapObject, det: Detection) -> None:
        w0, w = obj.weight, max(det.weight, 1e-3)
        if obj.observations:
            _blend(obj, w0, det.position, det.size, det.embedding, w)
        obj.weight = w0 + w
        obj.observations += 1
        obj.last_seen = max(obj.last_seen, det.stamp)
        self._relabel(obj)

    def _relabel(self, obj: MapObject) -> None:
        if self.label_embeddings is None or not self.labels:
            return
        sims = self.label_embeddings @ obj.embedding
        k = int(np.argmax(sims))
        obj.label_score = float(sims[k])
        obj.label = self.labels[k] if sims[k] >= self.config.label_min_score else ""

    # ---------------------------------------------------------------- queries
    def query(self, text_embedding: np.ndarray, max_results: int = 0, min_score: float = -1.0,
              label_scores: Optional[np.ndarray] = None) -> List[Tuple[MapObject, float]]:
        """Entries ranked by score, those >= ``min_score``.

        Score: cosine of the text embedding with :meth:`query_embedding`; or, with ``label_scores``
        (one per label: how well the query accepts it, from the query head), the object's label
        distribution (:meth:`label_distribution`) weighted by them (0..1; unnamed objects score 0).
        """
        with self._lock:
            if label_scores is not None:
                ls = np.asarray(label_scores, np.float32)
                objs = list(self.objects.values())
                # one answer per co-located group: its best-observed entry (its label and position);
                # answering a duplicate with the group's score named the object by the duplicate's own
                # label (the mission logged "green book" for the green cube it then fetched)
                scored = [(objs[j], float(self.label_distribution(objs[j]) @ ls))
                          for j in np.unique(self._colocated_best(objs))]
            else:
                scored = [(o, float(self.query_embedding(o) @ text_embedding)) for o in self.objects.values()]
            ranked = sorted(scored, key=lambda t: -t[1])
        ranked = [(o, s) for o, s in ranked if s >= min_score]
        return ranked[:max_results] if max_results > 0 else ranked

    def query_embedding(self, obj: MapObject) -> np.ndarray:
        """The embedding a text query is compared with.

        With label prototypes and ``snap_temperature`` > 0, an object whose embedding is close to
        the known labels (``label_score >= label_min_score``) is represented by the softmax-weighted
        mean of the label prototypes (a soft snap onto the text manifold the embedder was trained
        to hit); unseen wordings of a label then score like the label's own text embedding.
        Objects far from every label keep their raw embedding (open vocabulary).
        """
        t = self.config.snap_temperature
        if t <= 0 or self.label_embeddings is None or obj.label_score < self.config.label_min_score:
            return obj.embedding
        sims = self.label_embeddings @ obj.embedding
        w = np.exp(t * (sims - sims.max()))
        e = (w / w.sum()) @ self.label_embeddings
        return e / max(float(np.linalg.norm(e)), 1e-12)

    def _colocated_best(self, objs: Sequence[MapObject]) -> np.ndarray:
        """(len(objs),) for each entry the index of the best-observed entry (the largest evidence
        weight) among those closer than ``colocated_m`` (itself when none is). Two entries that close
        are one object seen two ways (a far, small first view can start a second entry with another
        label). The query answers with the best-observed entry's labels, not a weighted mix: with 84
        labels one stray look (weight ~0.2 of the object's) pulled a right answer's score under the
        match threshold ("the blue cylinder" 0.775 < 0.779, the stray look read "blue egg")."""
        r = self.config.colocated_m
        if r <= 0 or len(objs) < 2:
            return np.arange(len(objs))
        pos = np.stack([o.position for o in objs])
        near = np.linalg.norm(pos[:, None] - pos[None], axis=-1) < r
        w = np.array([max(o.weight, 1e-6) for o in objs])
        return np.argmax(np.where(near, w[None, :], -1.0), axis=1)

    def label_distribution(self, obj: MapObject) -> np.ndarray:
        """(len(labels),) softmax(snap_temperature * similarity) over the label prototypes (one-hot when
        ``snap_temperature`` is 0); zeros for an object below ``label_min_score`` (no name)."""
        n = len(self.labels)
        if self.label_embeddings is None or not n or obj.label_score < self.config.label_min_score:
            return np.zeros(n, np.float32)
        sims = self.label_embeddings @ obj.embedding
        t = self.config.snap_temperature
        if t <= 0:
            out = np.zeros(n, np.float32)
            out[int(np.argmax(sims))] = 1.0
            return out
        w = np.exp(t * (sims - sims.max()))
        return (w / w.sum()).astype(np.float32)

    def snapshot(self) -> List[MapObject]:
        with self._lock:
            return [MapObject(**{**o.__dict__}) for o in self.objects.values()]

    # ---------------------------------------------------------------- editing
    def clear(self) -> int:
        with self._lock:
            n = len(self.objects)
            self.objects.clear()
            return n

    def forget(self, ids: Sequence[int]) -> int:
        with self._lock:
            return sum(self.objects.pop(int(i), None) is not None for i in ids)

    def forget_older_than(self, stamp: float) -> int:
        with self._lock:
            old = [i for i, o in self.objects.items() if o.last_seen < stamp]
            return self.forget(old)

    # ---------------------------------------------------------------- persistence
    def save(self, path: os.PathLike | str, frame_id: str = "map") -> Path:
        path = Path(path)
        with self._lock:
            doc = {"format": FORMAT, "frame_id": frame_id, "saved_at": time.time(), "next_id": self._next_id,
                   "objects": [o.to_json() for o in self.objects.values()]}
        atomic.write_bytes(str(path), json.dumps(doc).encode())
        return path

    def load(self, path: os.PathLike | str) -> int:
        """Replace the map with the file's content; return the object count.

        :raises FileNotFoundError: no file
        :raises CorruptMapFile: unreadable/invalid file (moved aside first; the map is unchanged)
        """
        path = Path(path)
        raw = path.read_bytes()
        try:
            doc = json.loads(raw)
            if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                raise ValueError(f"not a {FORMAT} file")
            objects = [MapObject.from_json(d) for d in doc["objects"]]
            next_id = max([int(doc.get("next_id", 1))] + [o.id + 1 for o in objects])
        except (ValueError, KeyError, TypeError) as exc:
            moved = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
            os.replace(path, moved)
            raise CorruptMapFile(path, moved, str(exc)) from None
        with self._lock:
            self.objects = {o.id: o for o in objects}
            self._next_id = next_id
            for o in objects:
                self._relabel(o)
        return len(objects)
