"""Scoped, minimal torchvision stand-in for importing ``segment_anything`` and ``open_clip``.

Why: both packages import torchvision at package import, there is no CPU torchvision build
for our machines and the CUDA wheel is not an option. Only a handful of torchvision names
are ever *called* on our code paths, so they are re-implemented here in plain torch:

=====================================================  =========================================
name (module it is imported into)                      here
=====================================================  =========================================
``transforms.functional.resize``                       PIL images: ``Image.resize(BILINEAR/...)``
(segment_anything ``ResizeLongestSide.apply_image``)   as torchvision does; tensors:
                                                       ``F.interpolate(antialias=True)``
``transforms.functional.to_pil_image`` (same)          ``PIL.Image.fromarray`` (HWC uint8)
``ops.boxes.batched_nms``, ``box_area``, ``nms``       plain torch (greedy NMS, same results)
(``SamAutomaticMaskGenerator``)
``ops.misc.FrozenBatchNorm2d`` (open_clip ``utils``)    small ``nn.Module`` with the same buffers
``transforms.InterpolationMode`` (open_clip)           the same ``Enum`` values
=====================================================  =========================================

Everything else those modules import (open_clip's ``Normalize``, ``Compose``, ``Resize``,
``CenterCrop``, ``RandomResizedCrop``, ``ToTensor``, ``ColorJitter``, ``Grayscale`` and
``transforms.functional.*`` other than the two above) is a placeholder that raises
``NotImplementedError`` naming itself when used: our CLIP pre-processing is plain torch
(``backends/clip.py``) and never builds open_clip's torchvision transforms
(``open_clip.create_model_and_transforms`` / ``image_transform`` would hit them).

Scope: :func:`torchvision_standin` registers the stand-in modules in ``sys.modules`` only for
the duration of the ``with`` block and removes exactly the entries it added on exit, so
after :func:`import_segment_anything` / :func:`import_open_clip` return, ``import
torchvision`` fails again everywhere else in the process (the two packages keep references
to the stand-in functions they imported). A module lock serialises the window; other
threads importing torchvision *during* it would see the stand-in (imports happen once, at
backend construction). Third-party modules imported *inside* the window could still take
the stand-in for a real torchvision; two guards: cached probes known to run there
(transformers' ``is_torchvision_available``, imported by open_clip) are evaluated before the
window, and after it any module outside segment_anything/open_clip/mobile_sam that holds a
stand-in object triggers a ``RuntimeWarning``. If a real torchvision is importable it is
used and nothing is installed.
"""

from __future__ import annotations

import contextlib
import enum
import importlib
import importlib.machinery
import importlib.util
import sys
import threading
import types
from typing import Iterator, List, Sequence, Tuple, Union

import torch

STANDIN_ATTR = "__rlstack_torchvision_standin__"
_LOCK = threading.RLock()


class InterpolationMode(enum.Enum):
    """Same members and values as ``torchvision.transforms.InterpolationMode``."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def _placeholder_function(qualname: str):
    def fn(*args, **kwargs):
        raise NotImplementedError(
            f"{qualname} is not provided by rlstack's torchvision stand-in (no torchvision installed); "
            f"it is imported but not used on rlstack's SAM/CLIP code paths (backends/_torchvision_compat.py)")

    fn.__name__ = fn.__qualname__ = qualname.rsplit(".", 1)[-1]
    return fn


def _placeholder_class(qualname: str):
    def __init__(self, *args, **kwargs):  # noqa: N807
        raise NotImplementedError(
            f"{qualname} is not provided by rlstack's torchvision stand-in (no torchvision installed); "
            f"it is imported but not used on rlstack's SAM/CLIP code paths (backends/_torchvision_compat.py)")

    module, name = qualname.rsplit(".", 1)
    return type(name, (object,), {"__init__": __init__, "__module__": module})


# ---- transforms.functional ------------------------------------------------------------------

def _output_size(h: int, w: int, size: Union[int, Sequence[int]], max_size=None) -> Tuple[int, int]:
    """torchvision's rule: (h, w) as given, or a single int = new length of the shorter edge."""
    if isinstance(size, (list, tuple)) and len(size) == 2:
        return int(size[0]), int(size[1])
    s = int(size[0] if isinstance(size, (list, tuple)) else size)
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = s, int(s * long / short)
    if max_size is not None and new_long > max_size:
        new_short, new_long = int(max_size * new_short / new_long), max_size
    return (new_long, new_short) if w <= h else (new_short, new_long)


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """``torchvision.transforms.functional.resize`` for PIL images and (..., C, H, W) tensors."""
    mode = InterpolationMode(interpolation.value if isinstance(interpolation, InterpolationMode) else interpolation)
    if isinstance(img, torch.Tensor):
        h, w = img.shape[-2:]
        oh, ow = _output_size(h, w, size, max_size)
        if (oh, ow) == (h, w):
            return img
        if mode not in (InterpolationMode.NEAREST, InterpolationMode.NEAREST_EXACT, InterpolationMode.BILINEAR,
                        InterpolationMode.BICUBIC):
            raise NotImplementedError(f"torchvision stand-in resize: interpolation {mode} for tensors")
        x = img.reshape(-1, *img.shape[-3:]) if img.dim() != 4 else img
        dtype = x.dtype
        x = x.float() if not x.is_floating_point() else x
        kw = {"align_corners": False, "antialias": bool(antialias)} if mode in (
            InterpolationMode.BILINEAR, InterpolationMode.BICUBIC) else {}
        y = torch.nn.functional.interpolate(x, size=(oh, ow), mode=mode.value, **kw)
        if not dtype.is_floating_point:
            y = y.round_().clamp_(torch.iinfo(dtype).min, torch.iinfo(dtype).max).to(dtype)
        return y.reshape(*img.shape[:-2], oh, ow)
    from PIL import Image  # a PIL image (segment_anything's ResizeLongestSide.apply_image)

    if not isinstance(img, Image.Image):
        raise TypeError(f"resize: expected a PIL image or a tensor, got {type(img).__name__}")
    w, h = img.size
    oh, ow = _output_size(h, w, size, max_size)
    pil = {"nearest": Image.NEAREST, "nearest-exact": Image.NEAREST, "bilinear": Image.BILINEAR,
           "bicubic": Image.BICUBIC, "box": Image.BOX, "hamming": Image.HAMMING, "lanczos": Image.LANCZOS}[mode.value]
    return img.resize((ow, oh), pil)


def to_pil_image(pic, mode=None):
    """``torchvision.transforms.functional.to_pil_image`` for HWC/HW numpy arrays and CHW/HW tensors."""
    import numpy as np
    from PIL import Image

    if isinstance(pic, torch.Tensor):
        t = pic.detach().cpu()
        if t.is_floating_point():
            t = t.mul(255).byte()
        a = t.numpy()
        a = np.transpose(a, (1, 2, 0)) if a.ndim == 3 else a
    else:
        a = np.asarray(pic)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[..., 0]
    if a.dtype != np.uint8 and mode is None:
        raise NotImplementedError("torchvision stand-in to_pil_image: only uint8 arrays / [0,1] float tensors")
    return Image.fromarray(a, mode=mode) if mode else Image.fromarray(a)


# ---- ops ------------------------------------------------------------------------------------

def box_area(boxes: torch.Tensor) -> torch.Tensor:
    """Area of (N, 4) boxes in (x1, y1, x2, y2) format."""
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def nms(boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """Greedy NMS (torchvision.ops.nms): indices kept, by decreasing score; IoU > threshold suppressed."""
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.int64, device=boxes.device)
    b = boxes.float()
    area = box_area(b)
    lt = torch.max(b[:, None, :2], b[None, :, :2])
    rb = torch.min(b[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(dim=2)
    iou = inter / (area[:, None] + area[None, :] - inter)
    order = torch.argsort(scores, descending=True, stable=True)
    suppressed = torch.zeros(len(b), dtype=torch.bool, device=b.device)
    keep: List[int] = []
    for i in order.tolist():
        if suppressed[i]:
            continue
        keep.append(i)
        suppressed |= iou[i] > iou_threshold
    return torch.tensor(keep, dtype=torch.int64, device=boxes.device)


def batched_nms(boxes: torch.Tensor, scores: torch.Tensor, idxs: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """NMS per category ``idxs`` (torchvision's coordinate-offset trick)."""
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.int64, device=boxes.device)
    offsets = idxs.to(boxes) * (boxes.max() + 1)
    return nms(boxes + offsets[:, None], scores, iou_threshold)


class FrozenBatchNorm2d(torch.nn.Module):
    """BatchNorm2d with fixed statistics and affine parameters (torchvision.ops.misc.FrozenBatchNorm2d)."""

    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(num_features))
        self.register_buffer("bias", torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        state_dict.pop(prefix + "num_batches_tracked", None)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.weight * (self.running_var + self.eps).rsqrt()
        bias = self.bias - self.running_mean * scale
        return x * scale.reshape(1, -1, 1, 1) + bias.reshape(1, -1, 1, 1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.weight.shape[0]}, eps={self.eps})"


# ---- module assembly ------------------------------------------------------------------------

_TRANSFORM_CLASSES = ("Normalize", "Compose", "RandomResizedCrop", "ToTensor", "Resize", "CenterCrop", "ColorJitter",
                      "Grayscale", "PILToTensor", "ConvertImageDtype", "ToPILImage", "Pad", "Lambda",
                      "RandomHorizontalFlip", "RandomCrop")


def _module(name: str, package: bool = False, **attrs) -> types.ModuleType:
    m = types.ModuleType(name, f"rlstack torchvision stand-in ({__name__})")
    m.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=package)
    if package:
        m.__path__ = []
    m.__file__ = __file__
    setattr(m, STANDIN_ATTR, True)
    for k, v in attrs.items():
        setattr(m, k, v)

    def __getattr__(attr: str):  # noqa: N807 - unknown public names become raising placeholders
        if attr.startswith("_"):
            raise AttributeError(attr)
        return _placeholder_function(f"{name}.{attr}")

    m.__getattr__ = __getattr__
    return m


def _build_modules() -> dict:
    fn = _module("torchvision.transforms.functional", resize=resize, to_pil_image=to_pil_image,
                 InterpolationMode=InterpolationMode)
    tr = _module("torchvision.transforms", package=True, functional=fn, InterpolationMode=InterpolationMode,
                 **{c: _placeholder_class(f"torchvision.transforms.{c}") for c in _TRANSFORM_CLASSES})
    boxes = _module("torchvision.ops.boxes", nms=nms, batched_nms=batched_nms, box_area=box_area)
    misc = _module("torchvision.ops.misc", FrozenBatchNorm2d=FrozenBatchNorm2d)
    ops = _module("torchvision.ops", package=True, boxes=boxes, misc=misc, nms=nms, batched_nms=batched_nms,
                  box_area=box_area, FrozenBatchNorm2d=FrozenBatchNorm2d)
    tv = _module("torchvision", package=True, transforms=tr, ops=ops, __version__="0.0+rlstack.standin")
    return {m.__name__: m for m in (tv, tr, fn, ops, boxes, misc)}


def real_torchvision_available() -> bool:
    mod = sys.modules.get("torchvision")
    if mod is not None:
        return not getattr(mod, STANDIN_ATTR, False)
    try:
        return importlib.util.find_spec("torchvision") is not None
    except (ImportError, ValueError):
        return False


@contextlib.contextmanager
def torchvision_standin() -> Iterator[bool]:
    """Within the block ``import torchvision`` works: the real one if installed, else the stand-in.

    Yields True when the stand-in is installed. On exit every ``sys.modules`` entry it added is
    removed again (entries that existed before are never touched).
    """
    with _LOCK:
        if real_torchvision_available() or "torchvision" in sys.modules:  # real, or an enclosing block's stand-in
            yield False
            return
        _prewarm_availability_probes()
        added = _build_modules()
        before = set(sys.modules)
        for k, v in added.items():
            sys.modules.setdefault(k, v)
        try:
            yield True
        finally:
            for k, v in added.items():
                if sys.modules.get(k) is v:
                    del sys.modules[k]
            # Submodules the imports might have created under the stand-in (none expected).
            for k in [k for k in sys.modules if k == "torchvision" or k.startswith("torchvision.")]:
                if getattr(sys.modules[k], STANDIN_ATTR, False):
                    del sys.modules[k]
            _warn_about_leaks(added, set(sys.modules) - before - set(added))


# Packages allowed to keep references to the stand-in (the ones it exists for).
ALLOWED_USERS = ("segment_anything", "open_clip", "mobile_sam")


def _prewarm_availability_probes() -> None:
    """Let cached "is torchvision installed?" probes answer *before* the stand-in is visible.

    open_clip imports ``transformers`` (when installed) at package import, and transformers
    caches ``is_torchvision_available()`` (``importlib.util.find_spec``, ``lru_cache``): asked
    inside the window it would see the stand-in and answer True for the rest of the process.
    """
    try:
        if importlib.util.find_spec("transformers") is None:
            return
        from transformers.utils import import_utils as iu
    except Exception:  # noqa: BLE001 - a broken transformers is not our concern here
        return
    for probe in ("is_torchvision_available", "is_torchvision_v2_available"):
        fn = getattr(iu, probe, None)
        if callable(fn):
            try:
                fn()
            except Exception:  # noqa: BLE001
                pass


def _warn_about_leaks(added: dict, new_modules: set) -> None:
    """Warn if a module other than ALLOWED_USERS, imported inside the window, kept a stand-in object."""
    ours = {id(m) for m in added.values()}
    for m in added.values():
        ours |= {id(v) for k, v in vars(m).items() if not k.startswith("__")}
    leaked = []
    for name in sorted(new_modules):
        if name.split(".")[0] in ALLOWED_USERS:
            continue
        mod = sys.modules.get(name)
        try:
            if mod is not None and any(id(v) in ours for v in list(vars(mod).values())):
                leaked.append(name)
        except TypeError:
            continue
    if leaked:
        import warnings

        warnings.warn(f"modules imported while the torchvision stand-in was visible kept references to it: "
                      f"{', '.join(leaked)} (rlstack_perception.backends._torchvision_compat)", RuntimeWarning,
                      stacklevel=3)


def import_with_torchvision(name: str) -> types.ModuleType:
    """``importlib.import_module(name)`` with :func:`torchvision_standin` around the first import."""
    if name in sys.modules:
        return sys.modules[name]
    with torchvision_standin():
        return importlib.import_module(name)


def import_segment_anything() -> types.ModuleType:
    try:
        return import_with_torchvision("segment_anything")
    except ImportError as exc:
        raise ImportError(f"SAM backend needs the segment_anything package (pip install --no-deps "
                          f"segment-anything, requirements/nodeps.txt): {exc}") from exc


def import_open_clip() -> types.ModuleType:
    try:
        return import_with_torchvision("open_clip")
    except ImportError as exc:
        raise ImportError(f"CLIP backend needs the open_clip package (rlstack's 'make setup' installs it from "
                          f"requirements/nodeps.txt without dependencies, plus ftfy, regex, huggingface-hub and "
                          f"safetensors from requirements/perception.txt): {exc}") from exc
