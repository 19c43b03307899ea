"""Image observation terms: the one preprocessing of camera frames, shared by training and serving.

An image term of ``io.yaml`` (section ``image_observation``) says which camera topic a policy
reads and exactly how a frame becomes network input. Training (``rlstack_learning``) and the
policy node (``rlstack_policy``) both call :func:`preprocess` and :class:`FrameStack` from this
module, so the network sees the same pixels in both. Pure NumPy (no OpenCV, no torch)::

    image_observation:
    - name: overhead
      source: {topic: /overhead_camera/image_raw, type: sensor_msgs/msg/Image}
      encoding: rgb8               # the only accepted sensor_msgs/Image encoding (others rejected)
      width: 320                   # the source frame's size; another size is rejected
      height: 240
      crop: {x: 96, y: 56, width: 128, height: 128}      # pixels, from the top-left corner
      resize: {width: 64, height: 64, method: area}      # area average (box filter)
      channel_order: rgb
      layout: CHW                  # network input (batch, depth * 3, height, width), oldest frame first
      dtype: uint8
      normalization: divide by 255 inside the ONNX graph (feed uint8 0..255)
      stack: {depth: 2, stride: 1} # frames t - (depth-1)*stride*period ... t, by header stamp
      input: image                 # the ONNX input that takes this term
      description: ...

Stacking is by stamp: a stack holds ``depth`` frames whose stamps are ``stride`` control periods
apart (within ``tolerance`` of a period); a gap (a dropped or late frame) gives no stack, and
the policy node then takes its safe step. ``crop`` then ``resize`` map the source frame
``(height, width, 3)`` to ``(3, resize.height, resize.width)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

IMAGE_MSG_TYPE = "sensor_msgs/msg/Image"
#: encodings a term may declare, with their channel count and order
ENCODINGS = {"rgb8": ("rgb", 3), "bgr8": ("bgr", 3), "mono8": ("mono", 1)}
LAYOUTS = ("CHW",)
RESIZE_METHODS = ("area",)
NORMALIZATION = "divide by 255 inside the ONNX graph (feed uint8 0..255)"


class ImageError(ValueError):
    """A frame that does not fit its term (encoding, size, data length): one readable line."""


@dataclass(frozen=True)
class ImageSpec:
    """One image observation term (see the module docstring for the ``io.yaml`` form)."""

    name: str
    topic: str
    encoding: str
    width: int
    height: int
    crop: Tuple[int, int, int, int]        # x, y, width, height
    resize: Tuple[int, int]                # width, height
    stack_depth: int = 1
    stack_stride: int = 1
    input: str = "image"
    description: str = ""
    channel_order: str = "rgb"
    layout: str = "CHW"
    dtype: str = "uint8"
    resize_method: str = "area"

    @property
    def channels(self) -> int:
        return ENCODINGS[self.encoding][1]

    @property
    def input_shape(self) -> Tuple[int, int, int]:
        """Network input per sample: (depth * channels, height, width)."""
        return (self.stack_depth * self.channels, self.resize[1], self.resize[0])

    def to_dict(self) -> Dict[str, Any]:
        x, y, w, h = self.crop
        return {
            "name": self.name,
            "source": {"topic": self.topic, "type": IMAGE_MSG_TYPE},
            "encoding": self.encoding, "width": int(self.width), "height": int(self.height),
            "crop": {"x": int(x), "y": int(y), "width": int(w), "height": int(h)},
            "resize": {"width": int(self.resize[0]), "height": int(self.resize[1]), "method": self.resize_method},
            "channel_order": self.channel_order, "layout": self.layout, "dtype": self.dtype,
            "normalization": NORMALIZATION,
            "stack": {"depth": int(self.stack_depth), "stride": int(self.stack_stride)},
            "input": self.input,
            "description": self.description,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ImageSpec":
        """From a descriptor term; raise ``ValueError`` listing every problem."""
        problems = check_term(d)
        if problems:
            raise ValueError("; ".join(problems))
        c, r, s = d["crop"], d["resize"], d["stack"]
        return cls(d["name"], d["source"]["topic"], d["encoding"], int(d["width"]), int(d["height"]),
                   (int(c["x"]), int(c["y"]), int(c["width"]), int(c["height"])), (int(r["width"]), int(r["height"])),
                   int(s["depth"]), int(s["stride"]), d["input"], str(d.get("description", "")),
                   d["channel_order"], d["layout"], d["dtype"], r.get("method", "area"))


def _pos_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def check_term(d: Any, where: str = "") -> List[str]:
    """Every problem of one ``image_observation`` term ([] = fine)."""
    if not isinstance(d, Mapping):
        return [f"{where}must be a mapping"]
    name = d.get("name", "?")
    w = f"{where}('{name}'): " if where else f"image term '{name}': "
    need = ("name", "source", "encoding", "width", "height", "crop", "resize", "channel_order", "layout",
            "dtype", "stack", "input")
    missing = [k for k in need if k not in d]
    if missing:
        return [f"{w}missing {missing}"]
    out: List[str] = []
    src = d["source"]
    if not (isinstance(src, Mapping) and isinstance(src.get("topic"), str) and src["topic"].startswith("/")):
        out.append(f"{w}source.topic must be an absolute topic name, got {src!r}")
    elif src.get("type") != IMAGE_MSG_TYPE:
        out.append(f"{w}source.type must be {IMAGE_MSG_TYPE}, got {src.get('type')!r}")
    enc = d["encoding"]
    if enc not in ENCODINGS:
        out.append(f"{w}encoding must be one of {sorted(ENCODINGS)}, got {enc!r}")
    elif d["channel_order"] != ENCODINGS[enc][0]:
        out.append(f"{w}channel_order must be '{ENCODINGS[enc][0]}' for encoding {enc}, got {d['channel_order']!r}")
    if d["layout"] not in LAYOUTS:
        out.append(f"{w}layout must be one of {list(LAYOUTS)}, got {d['layout']!r}")
    if d["dtype"] != "uint8":
        out.append(f"{w}dtype must be uint8, got {d['dtype']!r}")
    if not (_pos_int(d["width"]) and _pos_int(d["height"])):
        out.append(f"{w}width and height must be positive integers, got {d['width']!r} x {d['height']!r}")
        return out
    c = d["crop"]
    if not (isinstance(c, Mapping) and all(isinstance(c.get(k), int) and not isinstance(c.get(k), bool)
                                           for k in ("x", "y", "width", "height"))):
        out.append(f"{w}crop must be {{x, y, width, height}} integers, got {c!r}")
    elif c["x"] < 0 or c["y"] < 0 or c["width"] <= 0 or c["height"] <= 0 \
            or c["x"] + c["width"] > d["width"] or c["y"] + c["height"] > d["height"]:
        out.append(f"{w}crop {dict(c)} does not lie inside the {d['width']}x{d['height']} frame")
    r = d["resize"]
    if not (isinstance(r, Mapping) and _pos_int(r.get("width")) and _pos_int(r.get("height"))):
        out.append(f"{w}resize must be {{width, height}} positive integers, got {r!r}")
    elif r.get("method", "area") not in RESIZE_METHODS:
        out.append(f"{w}resize.method must be one of {list(RESIZE_METHODS)}, got {r.get('method')!r}")
    elif isinstance(c, Mapping) and isinstance(c.get("width"), int) and (
            r["width"] > c["width"] or r["height"] > c["height"]):
        out.append(f"{w}resize {r['width']}x{r['height']} is larger than the crop (area averaging only shrinks)")
    s = d["stack"]
    if not (isinstance(s, Mapping) and _pos_int(s.get("depth")) and _pos_int(s.get("stride"))):
        out.append(f"{w}stack must be {{depth, stride}} positive integers, got {s!r}")
    if not (isinstance(d["input"], str) and d["input"] and d["input"] != "obs"):
        out.append(f"{w}input must name an ONNX input other than 'obs', got {d['input']!r}")
    return out


# ----------------------------------------------------------------------------- preprocessing
def _area_weights(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in) box-filter weights: output pixel i averages input [i * n_in/n_out, (i+1) * n_in/n_out)."""
    w = np.zeros((n_out, n_in), dtype=np.float64)
    scale = n_in / n_out
    for i in range(n_out):
        a, b = i * scale, (i + 1) * scale
        for j in range(int(math.floor(a)), min(int(math.ceil(b)), n_in)):
            w[i, j] = min(b, j + 1) - max(a, j)
    return w / scale


_WEIGHTS: Dict[Tuple[int, int], np.ndarray] = {}


def _weights(n_in: int, n_out: int) -> np.ndarray:
    key = (n_in, n_out)
    if key not in _WEIGHTS:
        _WEIGHTS[key] = _area_weights(n_in, n_out)
    return _WEIGHTS[key]


def area_resize(img: np.ndarray, width: int, height: int) -> np.ndarray:
    """Area-average (box filter) an (H, W, C) uint8 image to (height, width, C) uint8 (round half to even)."""
    h, w = img.shape[:2]
    if (h, w) == (height, width):
        return np.ascontiguousarray(img)
    x = img.astype(np.float64)
    x = np.einsum("ij,jkc->ikc", _weights(h, height), x)
    x = np.einsum("ij,kjc->kic", _weights(w, width), x)
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def preprocess(frame: np.ndarray, spec: ImageSpec, cropped: bool = False) -> np.ndarray:
    """One source frame (H, W, C) uint8 in the term's encoding -> network frame (C, h, w) uint8.

    ``cropped=True``: ``frame`` is already the crop window (a training env that renders only
    the window); it must then have the crop's size.
    """
    x, y, cw, ch = spec.crop
    frame = np.asarray(frame)
    if frame.ndim == 2:
        frame = frame[:, :, None]
    if cropped:
        if frame.shape[:2] != (ch, cw):
            raise ImageError(f"image '{spec.name}': cropped frame is {frame.shape[1]}x{frame.shape[0]}, "
                             f"the crop is {cw}x{ch}")
        window = frame
    else:
        if frame.shape[:2] != (spec.height, spec.width):
            raise ImageError(f"image '{spec.name}': frame is {frame.shape[1]}x{frame.shape[0]}, "
                             f"the bundle expects {spec.width}x{spec.height}")
        window = frame[y:y + ch, x:x + cw]
    if window.shape[2] != spec.channels or window.dtype != np.uint8:
        raise ImageError(f"image '{spec.name}': expected {spec.channels} uint8 channel(s), "
                         f"got {window.shape[2]} {window.dtype}")
    out = area_resize(window, spec.resize[0], spec.resize[1])
    return np.ascontiguousarray(out.transpose(2, 0, 1))


def decode(spec: ImageSpec, encoding: str, height: int, width: int, step: int, data: Any) -> np.ndarray:
    """A ``sensor_msgs/Image``'s fields -> (H, W, C) uint8 view; :class:`ImageError` (one line) when
    the encoding, the size or the data length does not match the term."""
    if encoding != spec.encoding:
        raise ImageError(f"image '{spec.name}' on {spec.topic}: encoding '{encoding}', the bundle expects "
                         f"'{spec.encoding}'")
    if (width, height) != (spec.width, spec.height):
        raise ImageError(f"image '{spec.name}' on {spec.topic}: size {width}x{height}, the bundle expects "
                         f"{spec.width}x{spec.height}")
    c = spec.channels
    buf = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data.view(np.uint8).reshape(-1)
    if step < width * c or buf.size != step * height:
        raise ImageError(f"image '{spec.name}' on {spec.topic}: {buf.size} bytes with step {step}, expected "
                         f"{height} rows of at least {width * c} bytes")
    return buf.reshape(height, step)[:, :width * c].reshape(height, width, c)


# ----------------------------------------------------------------------------- stacking
class FrameStack:
    """The newest preprocessed frames of one term, by stamp, and the stack the network takes.

    ``push(stamp, frame)`` keeps frames in stamp order (a frame whose stamp is not newer than the
    newest is refused: ``"out_of_order"``). ``stack()`` gives ``(depth * C, h, w)`` with the oldest
    frame first, or the reason it cannot: too few frames yet, or a gap -- consecutive chosen
    frames must be ``stride * period_s`` apart within ``tolerance * period_s``. Training fills it
    with one frame per control step (:meth:`push` with the step's sim time), the policy node with
    the camera's header stamps: the same rule decides which frames are stacked.
    """

    def __init__(self, spec: ImageSpec, period_s: float, tolerance: float = 0.5) -> None:
        self.spec = spec
        self.period_s = float(period_s)
        self.tolerance = float(tolerance)
        self.keep = (spec.stack_depth - 1) * spec.stack_stride + 1
        self._stamps: List[float] = []
        self._frames: List[np.ndarray] = []

    def clear(self) -> None:
        self._stamps, self._frames = [], []

    @property
    def newest_stamp(self) -> Optional[float]:
        return self._stamps[-1] if self._stamps else None

    def push(self, stamp: float, frame: np.ndarray) -> Optional[str]:
        if self._stamps and stamp <= self._stamps[-1]:
            return "out_of_order"
        self._stamps.append(float(stamp))
        self._frames.append(frame)
        if len(self._stamps) > self.keep:
            del self._stamps[0], self._frames[0]
        return None

    def fill(self, stamp: float, frame: np.ndarray) -> None:
        """Start an episode: the stack holds ``frame`` in every slot, spaced one period apart back from ``stamp``
        (what training does at reset, so the first step has a full stack)."""
        self.clear()
        for k in range(self.keep - 1, -1, -1):
            self.push(stamp - k * self.period_s, frame)

    def stack(self) -> Tuple[Optional[np.ndarray], Optional[str]]:
        s = self.spec
        if len(self._frames) < self.keep:
            return None, f"image stack of '{s.name}' has {len(self._frames)} of {self.keep} frames"
        idx = list(range(0, self.keep, s.stack_stride))
        want = s.stack_stride * self.period_s
        for a, b in zip(idx, idx[1:]):
            gap = self._stamps[b] - self._stamps[a]
            if abs(gap - want) > self.tolerance * self.period_s:
                return None, (f"image stack gap on {s.topic}: frames {gap * 1e3:.0f} ms apart, "
                              f"expected {want * 1e3:.0f} ms")
        return np.concatenate([self._frames[i] for i in idx], axis=0), None


def render_window(spec: ImageSpec, fx_frame: Sequence[float]) -> Tuple[float, float, float, float]:
    """The crop window as an off-axis frustum at unit distance (left, right, bottom, top), given the
    full frame's half extents ``(right, top)`` at unit distance: a renderer that draws only this
    window gives the crop's pixels without drawing the whole frame (used by training envs)."""
    r, t = float(fx_frame[0]), float(fx_frame[1])
    x, y, w, h = spec.crop
    dx, dy = 2 * r / spec.width, 2 * t / spec.height
    left = -r + x * dx
    top = t - y * dy
    return left, left + w * dx, top - h * dy, top
