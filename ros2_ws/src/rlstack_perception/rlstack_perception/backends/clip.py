"""CLIP-class embedder behind a narrow adapter, imported lazily.

:class:`ClipEmbedder` needs a model with ``encode_image(x (N,3,S,S) float) -> (N,D)`` and
``encode_text(tokens) -> (N,D)`` (open_clip's and OpenAI CLIP's signatures) and a
``tokenizer(list[str]) -> tokens``. Pre-processing is done here in plain torch (square
crop around the mask, bicubic resize to S, CLIP mean/std), so no torchvision transform runs.
:meth:`ClipEmbedder.from_checkpoint` builds it with ``open_clip.create_model(name,
pretrained=path)`` from a user checkpoint; importing open_clip needs torchvision or the shim
(docs/perception.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Sequence

import numpy as np

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


class ClipEmbedder:
    name = "clip"

    def __init__(self, model, tokenizer, image_size: int = 224, mean=CLIP_MEAN, std=CLIP_STD, margin: float = 1.2,
                 mask_background: bool = False, threads: int = 1) -> None:
        import torch

        torch.set_num_threads(threads)
        self.torch = torch
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.image_size = int(image_size)
        self.mean = torch.tensor(mean).view(1, 3, 1, 1)
        self.std = torch.tensor(std).view(1, 3, 1, 1)
        self.margin = margin
        self.mask_background = mask_background
        with torch.no_grad():
            self.dim = int(self.encode_text(["a"]).shape[1])

    @classmethod
    def from_checkpoint(cls, checkpoint: str, model_name: str = "ViT-B-32", **kwargs) -> "ClipEmbedder":
        if not checkpoint or not Path(checkpoint).is_file():
            raise FileNotFoundError(f"CLIP checkpoint not found: '{checkpoint}' (set clip_checkpoint)")
        try:
            import open_clip
        except ImportError as exc:
            raise ImportError(f"CLIP backend needs open_clip and torchvision or the torchvision shim "
                              f"(docs/perception.md): {exc}") from exc
        model = open_clip.create_model(model_name, pretrained=checkpoint, device="cpu")
        size = model.visual.image_size
        size = size[0] if isinstance(size, (tuple, list)) else size
        return cls(model, open_clip.get_tokenizer(model_name), image_size=size, **kwargs)

    def _crop(self, rgb: np.ndarray, mask: np.ndarray):
        torch = self.torch
        rows = np.flatnonzero(mask.any(axis=1))
        cols = np.flatnonzero(mask.any(axis=0))
        cy, cx = 0.5 * (rows[0] + rows[-1] + 1), 0.5 * (cols[0] + cols[-1] + 1)
        side = int(max(rows[-1] + 1 - rows[0], cols[-1] + 1 - cols[0]) * self.margin) + 2
        r0, c0 = int(cy - side / 2), int(cx - side / 2)
        img = rgb.astype(np.float32) / 255.0
        if self.mask_background:
            img = np.where(mask[..., None], img, 0.5)
        h, w = mask.shape
        out = np.full((side, side, 3), 0.5, np.float32)  # pad outside the image with grey
        rs, re, cs, ce = max(r0, 0), min(r0 + side, h), max(c0, 0), min(c0 + side, w)
        out[rs - r0:re - r0, cs - c0:ce - c0] = img[rs:re, cs:ce]
        x = torch.from_numpy(out).permute(2, 0, 1)[None]
        return torch.nn.functional.interpolate(x, size=(self.image_size, self.image_size), mode="bicubic",
                                               align_corners=False).clamp(0, 1)

    def embed(self, rgb: np.ndarray, masks: Sequence[np.ndarray]) -> np.ndarray:
        torch = self.torch
        if not masks:
            return np.zeros((0, self.dim), np.float32)
        x = torch.cat([self._crop(rgb, m) for m in masks])
        x = (x - self.mean) / self.std
        with torch.no_grad():
            e = self.model.encode_image(x).float()
        e = e / e.norm(dim=1, keepdim=True).clamp(min=1e-12)
        return e.numpy()

    def encode_text(self, texts: List[str]) -> np.ndarray:
        torch = self.torch
        with torch.no_grad():
            e = self.model.encode_text(self.tokenizer(list(texts))).float()
        e = e / e.norm(dim=1, keepdim=True).clamp(min=1e-12)
        return e.numpy()
