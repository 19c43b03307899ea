"""SAM-class segmenter behind a narrow adapter, imported lazily.

Layers (each testable alone):

* :class:`TorchSamPredictor` does what ``segment_anything.SamPredictor`` does (resize the
  long side to ``image_encoder.img_size``, normalise, pad, encode once per image, decode
  point prompts, upscale masks) using only the ``Sam`` module's own members
  (``image_encoder``, ``prompt_encoder`` incl. ``get_dense_pe()``, ``mask_decoder``,
  ``postprocess_masks``, ``pixel_mean``/``pixel_std``, ``mask_threshold``) and plain torch:
  no torchvision (``SamPredictor`` and ``SamAutomaticMaskGenerator`` import it).
* :class:`SamSegmenter` runs automatic mask generation over a point grid against any object
  with ``set_image(rgb)`` and ``predict(point_coords, point_labels, multimask_output,
  return_logits)`` (SamPredictor's signature): best mask per point by predicted IoU, SAM's
  stability score (IoU of the mask at logit thresholds +-offset), NMS by mask IoU in numpy.
* :meth:`SamSegmenter.from_checkpoint` builds the real model with ``segment_anything`` /
  ``mobile_sam``'s ``sam_model_registry`` (ViT-B/L/H, MobileSAM ``vit_t``) from a user path.
  Importing those packages needs ``torchvision`` (their ``__init__`` imports the automatic
  mask generator); see docs/perception.md for the torchvision-free shim proposal.
"""

from __future__ import annotations

from pathlib import Path
from typing import List

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
    def from_checkpoint(cls, checkpoint: str, model_type: str = "vit_b", **kwargs) -> "SamSegmenter":
        if not checkpoint or not Path(checkpoint).is_file():
            raise FileNotFoundError(f"SAM checkpoint not found: '{checkpoint}' (set sam_checkpoint)")
        try:
            if model_type == "vit_t":
                from mobile_sam import sam_model_registry  # MobileSAM keeps SAM's API
            else:
                from segment_anything import sam_model_registry
        except ImportError as exc:
            raise ImportError(f"SAM backend needs segment_anything (or mobile_sam for vit_t) and torchvision or "
                              f"the torchvision shim (docs/perception.md): {exc}") from exc
        sam = sam_model_registry[model_type](checkpoint=checkpoint)
        return cls(TorchSamPredictor(sam), **kwargs)

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
