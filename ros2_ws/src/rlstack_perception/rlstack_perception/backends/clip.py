"""CLIP-class embedder behind a narrow adapter, imported lazily.

:class:`ClipEmbedder` needs a model with ``encode_image(x (N,3,S,S) float) -> (N,D)`` and
``encode_text(tokens) -> (N,D)`` (open_clip's and OpenAI CLIP's signatures) and a
``tokenizer(list[str]) -> tokens``. Pre-processing is done here in plain torch (square
crop around the mask, bicubic resize to S, CLIP mean/std), so no torchvision transform runs.
:meth:`ClipEmbedder.from_checkpoint` builds it with ``open_clip.create_model(name,
pretrained=path)`` from a user checkpoint (a built-in architecture name such as ``ViT-B-32``,
or a custom architecture given as ``model_config``: an open_clip config dict or ``.json``
file) and open_clip's tokenizer; mean/std come from the model's preprocess config.
open_clip imports torchvision at package import; without one it is imported through the
scoped stand-in in :mod:`._torchvision_compat` (docs/reference/perception.md), and open_clip's
torchvision transforms are never built.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import List, Optional, Sequence, Union

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
    def from_checkpoint(cls, checkpoint: str, model_name: str = "ViT-B-32",
                        model_config: Optional[Union[dict, str]] = None, **kwargs) -> "ClipEmbedder":
        if not checkpoint or not Path(checkpoint).is_file():
            raise FileNotFoundError(f"CLIP checkpoint not found: '{checkpoint}' (set clip_checkpoint)")
        return cls.from_open_clip(*build_clip(model_name, checkpoint, model_config), **kwargs)

    @classmethod
    def from_open_clip(cls, model, tokenizer, **kwargs) -> "ClipEmbedder":
        size = model.visual.image_size
        size = size[0] if isinstance(size, (tuple, list)) else size
        pre = getattr(model.visual, "preprocess_cfg", None) or {}
        kwargs.setdefault("mean", tuple(pre.get("mean", CLIP_MEAN)))
        kwargs.setdefault("std", tuple(pre.get("std", CLIP_STD)))
        return cls(model, tokenizer, image_size=size, **kwargs)

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


def register_clip_config(model_name: str, model_config: Union[dict, str]) -> str:
    """Register a custom open_clip architecture (``{"embed_dim", "vision_cfg", "text_cfg"}``) as ``model_name``.

    A ``.json`` path registers under its file stem (returned); a dict is written to a temporary
    ``<model_name>.json`` and registered with ``open_clip.add_model_config`` (open_clip's API).
    """
    from rlstack_perception.backends._torchvision_compat import import_open_clip

    oc = import_open_clip()
    if isinstance(model_config, (str, Path)):
        path = Path(model_config)
        if not path.is_file():
            raise FileNotFoundError(f"CLIP model config not found: '{path}'")
        oc.add_model_config(path)
        return path.stem
    if not all(k in model_config for k in ("embed_dim", "vision_cfg", "text_cfg")):
        raise ValueError("CLIP model_config needs 'embed_dim', 'vision_cfg' and 'text_cfg'")
    path = Path(tempfile.mkdtemp(prefix="rlstack_clip_cfg_")) / f"{model_name}.json"
    path.write_text(json.dumps(model_config))
    oc.add_model_config(path)
    return model_name


def build_clip(model_name: str = "ViT-B-32", checkpoint: str = "", model_config: Optional[Union[dict, str]] = None):
    """(open_clip model in eval mode on CPU, its tokenizer); random weights if ``checkpoint`` is empty."""
    from rlstack_perception.backends._torchvision_compat import import_open_clip

    oc = import_open_clip()
    if model_config is not None:
        model_name = register_clip_config(model_name, model_config)
    if model_name not in oc.list_models():
        raise ValueError(f"unknown CLIP model '{model_name}' (open_clip built-ins: ViT-B-32, ViT-L-14, ...; "
                         f"or give model_config)")
    if checkpoint and not Path(checkpoint).is_file():
        raise FileNotFoundError(f"CLIP checkpoint not found: '{checkpoint}' (set clip_checkpoint)")
    try:
        model = oc.create_model(model_name, pretrained=checkpoint or None, device="cpu")
    except (RuntimeError, ValueError, KeyError, EOFError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "size mismatch" in str(exc) or "Missing key" in str(exc) or "Unexpected key" in str(exc):
            raise ValueError(f"CLIP checkpoint '{checkpoint}' does not fit model '{model_name}' ({first} ...)") from exc
        raise ValueError(f"CLIP checkpoint '{checkpoint}' could not be loaded for '{model_name}' "
                         f"({type(exc).__name__}: {first})") from exc
    except Exception as exc:  # noqa: BLE001 - unpickling errors of a corrupt file
        raise ValueError(f"CLIP checkpoint '{checkpoint}' could not be read ({type(exc).__name__}: {exc})") from exc
    return model.eval(), oc.get_tokenizer(model_name)
