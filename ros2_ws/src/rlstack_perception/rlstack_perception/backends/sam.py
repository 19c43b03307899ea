"""SAM-class segmenter behind a narrow adapter, imported lazily.

Layers (each testable alone):

* :class:`TorchSamPredictor` does what ``segment_anything.SamPredictor`` does (resize the
  long side to ``image_encoder.img_size``, normalise, pad, encode once per image, decode
  point prompts, upscale masks) using only the ``Sam`` module's own members
  (``image_encoder``, ``prompt_encoder`` incl. ``get_dense_pe()``, ``mask_decoder``,
  ``postprocess_masks``, ``pixel_mean``/``pixel_std``, ``mask_threshold``) and plain torch
  (no PIL round trip; agrees with ``SamPredictor`` up to resize rounding, tested).
* :class:`SamSegmenter` runs automatic mask generation over a point grid against any object
  with ``set_image(rgb)`` and ``predict(point_coords, point_labels, multimask_output,
  return_logits)`` (SamPredictor's signature): best mask per point by predicted IoU, SAM's
  stability score (IoU of the mask at logit thresholds +-offset), NMS by mask IoU in numpy.
* :func:`build_sam` builds a ``segment_anything.Sam`` (ViT-B/L/H from ``sam_model_registry``,
  MobileSAM ``vit_t`` from ``mobile_sam``, a type registered with :func:`register_sam_builder`,
  or any callable ``builder(checkpoint=None) -> Sam``) and loads a user checkpoint into it
  with clear errors (missing file, unreadable file, weights that do not fit the type).
* :meth:`SamSegmenter.from_checkpoint` = :func:`build_sam` + the real ``SamPredictor``
  (default) or :class:`TorchSamPredictor` (``predictor="torch"``).
  :class:`SamAutomaticSegmenter` wraps the real ``SamAutomaticMaskGenerator`` instead.

``segment_anything`` imports torchvision at package import; without one, it is imported
through the scoped stand-in in :mod:`._torchvision_compat` (docs/reference/perception.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, List, Union

import numpy as np

from rlstack_perception.frame import Frame
from rlstack_perception.segment import Segment


class TorchSamPredictor:
    def __init__(self, sam) -> None:
        import torch

        self.torch = torch
        self.model = sam.eval()
        self.size = int(sam.image_encoder.img_size)
        self.features = None
        self.original_size = None
        self.input_size = None

    def _resize_shape(self, h: int, w: int):
        s = self.size / max(h, w)
        return int(h * s + 0.5), int(w * s + 0.5)

    def set_image(self, rgb: np.ndarray) -> None:
        torch = self.torch
        h, w = rgb.shape[:2]
        nh, nw = self._resize_shape(h, w)
        x = torch.as_tensor(np.ascontiguousarray(rgb)).permute(2, 0, 1)[None].float()
        x = torch.nn.functional.interpolate(x, size=(nh, nw), mode="bilinear", align_corners=False, antialias=True)
        x = (x - self.model.pixel_mean.view(1, -1, 1, 1)) / self.model.pixel_std.view(1, -1, 1, 1)
        x = torch.nn.functional.pad(x, (0, self.size - nw, 0, self.size - nh))
        with torch.no_grad():
            self.features = self.model.image_encoder(x)
        self.original_size, self.input_size = (h, w), (nh, nw)

    def predict(self, point_coords: np.ndarray, point_labels: np.ndarray, multimask_output: bool = True,
                return_logits: bool = False):
        """Like SamPredictor.predict for one prompt: (masks (C,H,W), iou (C,), low-res logits)."""
        torch = self.torch
        if self.features is None:
            raise RuntimeError("set_image first")
        h, w = self.original_size
        nh, nw = self.input_size
        coords = np.asarray(point_coords, dtype=np.float32).copy()
        coords[:, 0] *= nw / w
        coords[:, 1] *= nh / h
        pts = (torch.as_tensor(coords)[None], torch.as_tensor(np.asarray(point_labels), dtype=torch.int)[None])
        with torch.no_grad():
            sparse, dense = self.model.prompt_encoder(points=pts, boxes=None, masks=None)
            low, iou = self.model.mask_decoder(image_embeddings=self.features,
                                               image_pe=self.model.prompt_encoder.get_dense_pe(),
                                               sparse_prompt_embeddings=sparse, dense_prompt_embeddings=dense,
                                               multimask_output=multimask_output)
            masks = self.model.postprocess_masks(low, (nh, nw), (h, w))
        masks = masks[0].numpy()
        if not return_logits:
            masks = masks > self.model.mask_threshold
        return masks, iou[0].numpy(), low[0].numpy()


_SAM_BUILDERS: Dict[str, Callable] = {}


def register_sam_builder(name: str, builder: Callable) -> None:
    """Make ``model_type=name`` build with ``builder(checkpoint=None) -> segment_anything.Sam``."""
    _SAM_BUILDERS[name] = builder


def _resolve_builder(model_type) -> Callable:
    if callable(model_type):
        return model_type
    if model_type in _SAM_BUILDERS:
        return _SAM_BUILDERS[model_type]
    from rlstack_perception.backends._torchvision_compat import import_segment_anything, import_with_torchvision

    if model_type == "vit_t":  # MobileSAM keeps SAM's API and registry
        try:
            registry = import_with_torchvision("mobile_sam").sam_model_registry
        except ImportError as exc:
            raise ImportError(f"SAM model type 'vit_t' (MobileSAM) needs the mobile_sam package (and timm), or "
                              f"pass model_type=<builder callable> / register_sam_builder: {exc}") from exc
    else:
        registry = import_segment_anything().sam_model_registry
    if model_type not in registry:
        raise ValueError(f"unknown SAM model type '{model_type}': one of {sorted(registry) + ['vit_t']} "
                         f"or a registered builder {sorted(_SAM_BUILDERS)}")
    return registry[model_type]


def load_sam_state_dict(path: str) -> dict:
    """A SAM state dict from ``path`` (plain, or wrapped as ``{"model": ...}`` / ``{"state_dict": ...}``)."""
    import torch

    if not path or not Path(path).is_file():
        raise FileNotFoundError(f"SAM checkpoint not found: '{path}' (set sam_checkpoint)")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - pickle/zip/EOF errors: say which file and why
        raise ValueError(f"SAM checkpoint '{path}' could not be read as a torch state dict "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from exc
    for key in ("model", "state_dict"):
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
    if not isinstance(state, dict) or not state:
        raise ValueError(f"SAM checkpoint '{path}' holds no state dict (got {type(state).__name__})")
    return state


def build_sam(model_type: Union[str, Callable] = "vit_b", checkpoint: str = ""):
    """A ``segment_anything.Sam`` in eval mode; weights from ``checkpoint``, random if it is empty."""
    if checkpoint and not Path(checkpoint).is_file():
        raise FileNotFoundError(f"SAM checkpoint not found: '{checkpoint}' (set sam_checkpoint)")
    builder = _resolve_builder(model_type)
    state = load_sam_state_dict(checkpoint) if checkpoint else None  # fail on a bad file before building
    sam = builder(checkpoint=None)
    if state is not None:
        try:
            sam.load_state_dict(state)
        except RuntimeError as exc:
            name = getattr(model_type, "__name__", model_type)
            raise ValueError(f"SAM checkpoint '{checkpoint}' does not fit model type '{name}' "
                             f"({str(exc).splitlines()[0]} ...): pick the matching sam_model_type") from exc
    return sam.eval()


def mask_iou(a: np.ndarray, b: np.ndarray) -> float:
    inter = np.logical_and(a, b).sum()
    return float(inter) / max(1, np.logical_or(a, b).sum())


class SamSegmenter:
    name = "sam"

    def __init__(self, predictor, points_per_side: int = 12, pred_iou_thresh: float = 0.7,
                 stability_offset: float = 1.0, mask_threshold: float = 0.0, nms_iou: float = 0.7) -> None:
        self.predictor = predictor
        self.points_per_side = points_per_side
        self.pred_iou_thresh = pred_iou_thresh
        self.stability_offset = stability_offset
        self.mask_threshold = mask_threshold
        self.nms_iou = nms_iou

    @classmethod
    def from_checkpoint(cls, checkpoint: str, model_type: Union[str, Callable] = "vit_b",
                        predictor: str = "segment_anything", **kwargs) -> "SamSegmenter":
        """``model_type``: vit_b | vit_l | vit_h | vit_t (MobileSAM) | a registered name | a builder callable.

        ``predictor``: ``"segment_anything"`` (the package's ``SamPredictor``) or ``"torch"``
        (:class:`TorchSamPredictor`, same outputs without the PIL resize round trip).
        """
        if not checkpoint or not Path(checkpoint).is_file():
            raise FileNotFoundError(f"SAM checkpoint not found: '{checkpoint}' (set sam_checkpoint)")
        return cls.from_model(build_sam(model_type, checkpoint), predictor=predictor, **kwargs)

    @classmethod
    def from_model(cls, sam, predictor: str = "segment_anything", **kwargs) -> "SamSegmenter":
        if predictor == "torch":
            return cls(TorchSamPredictor(sam), **kwargs)
        if predictor != "segment_anything":
            raise ValueError(f"predictor must be 'segment_anything' or 'torch', not '{predictor}'")
        from rlstack_perception.backends._torchvision_compat import import_segment_anything

        return cls(import_segment_anything().SamPredictor(sam.eval()), **kwargs)

    def segment(self, frame: Frame, points=None, valid=None) -> List[Segment]:
        h, w = frame.rgb.shape[:2]
        self.predictor.set_image(frame.rgb)
        n = self.points_per_side
        grid = [((i + 0.5) * w / n, (j + 0.5) * h / n) for j in range(n) for i in range(n)]
        cands = []
        for x, y in grid:
            logits, iou, _ = self.predictor.predict(np.array([[x, y]]), np.array([1]), multimask_output=True,
                                                    return_logits=True)
            k = int(np.argmax(iou))
            if iou[k] < self.pred_iou_thresh:
                continue
            lg = logits[k]
            hi = lg > self.mask_threshold + self.stability_offset
            lo = lg > self.mask_threshold - self.stability_offset
            stability = float(hi.sum()) / max(1, lo.sum())
            mask = lg > self.mask_threshold
            if mask.any():
                cands.append(Segment(mask=mask, stability=stability, score=float(iou[k]),
                                     meta={"source": self.name, "point": (x, y)}))
        cands.sort(key=lambda s: -(s.score * s.stability))
        kept: List[Segment] = []
        for s in cands:
            if all(mask_iou(s.mask, k.mask) < self.nms_iou for k in kept):
                kept.append(s)
        return kept


class SamAutomaticSegmenter:
    """``segment_anything.SamAutomaticMaskGenerator`` as a segmenter (its grid, crops, NMS, thresholds)."""

    name = "sam"

    def __init__(self, sam, **generator_kwargs) -> None:
        from rlstack_perception.backends._torchvision_compat import import_segment_anything

        generator_kwargs.setdefault("output_mode", "binary_mask")
        self.generator = import_segment_anything().SamAutomaticMaskGenerator(sam.eval(), **generator_kwargs)

    @classmethod
    def from_checkpoint(cls, checkpoint: str, model_type: Union[str, Callable] = "vit_b",
                        **generator_kwargs) -> "SamAutomaticSegmenter":
        if not checkpoint or not Path(checkpoint).is_file():
            raise FileNotFoundError(f"SAM checkpoint not found: '{checkpoint}' (set sam_checkpoint)")
        return cls(build_sam(model_type, checkpoint), **generator_kwargs)

    def segment(self, frame: Frame, points=None, valid=None) -> List[Segment]:
        import torch

        with torch.no_grad():
            anns = self.generator.generate(np.ascontiguousarray(frame.rgb))
        return [Segment(mask=np.asarray(a["segmentation"], bool), stability=float(a["stability_score"]),
                        score=float(a["predicted_iou"]),
                        meta={"source": "sam_amg", "point": tuple(a["point_coords"][0]), "bbox_xywh": a["bbox"]})
                for a in anns]
