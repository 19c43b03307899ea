"""Video helpers for the demo: compose two views side by side, and stream frames into an mp4.

:class:`Mp4Writer` encodes frame by frame (H.264 through imageio-ffmpeg, as
``rlstack_learning.evaluate.write_video`` does), so a minutes-long demo never holds its frames in
memory, and the file appears at its path only when it is complete (atomic rename at close).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
from PIL import Image


def _rgb(frame: np.ndarray, what: str) -> np.ndarray:
    frame = np.asarray(frame)
    if frame.ndim == 2:
        frame = np.repeat(frame[..., None], 3, axis=2)
    if frame.ndim != 3 or frame.shape[2] not in (3, 4) or frame.shape[0] == 0 or frame.shape[1] == 0:
        raise ValueError(f"{what} must be an (H, W, 3) RGB image, got shape {frame.shape}")
    frame = frame[..., :3]
    if frame.dtype != np.uint8:
        if np.issubdtype(frame.dtype, np.floating) and frame.size and float(np.nanmax(frame)) <= 1.0:
            frame = frame * 255.0  # float images in [0, 1]
        frame = np.clip(np.nan_to_num(frame), 0, 255).astype(np.uint8)
    return np.ascontiguousarray(frame)


def pad_to_even(frame: np.ndarray) -> np.ndarray:
    """Pad one black row / column where a side is odd (H.264 in yuv420p needs even sizes)."""
    h, w = frame.shape[:2]
    if h % 2 == 0 and w % 2 == 0:
        return frame
    return np.pad(frame, ((0, h % 2), (0, w % 2), (0, 0)))


def resize_to_height(frame: np.ndarray, height: int) -> np.ndarray:
    """Scale to ``height`` rows keeping the aspect ratio (width rounded, at least 1)."""
    frame = _rgb(frame, "frame")
    h, w = frame.shape[:2]
    width = max(1, int(round(w * height / h)))
    if (h, w) == (height, width):
        return frame
    return np.asarray(Image.fromarray(frame).resize((width, height), Image.BILINEAR))


def side_by_side(left_rgb: np.ndarray, right_rgb: np.ndarray, height: int) -> np.ndarray:
    """Both images scaled to ``height`` (aspect kept) and joined left | right, then padded with
    black to even width and height so the result can go straight into an H.264 video."""
    height = int(height)
    if height < 1:
        raise ValueError(f"height must be positive, got {height}")
    left = resize_to_height(left_rgb, height)
    right = resize_to_height(right_rgb, height)
    return pad_to_even(np.concatenate([left, right], axis=1))


class Mp4Writer:
    """Append RGB frames one at a time to an H.264 mp4; the file is renamed into place by
    :meth:`close`.

    All frames must have the size of the first one (odd sizes are padded to even). Use as a
    context manager: on an exception inside the block the partial video is discarded.
    """

    def __init__(self, path: Union[str, os.PathLike], fps: float, quality: float = 7.0) -> None:
        """
        :param path: the ``.mp4`` to write (its directory is created).
        :param fps: frames per second of the video.
        :param quality: imageio-ffmpeg's quality, 0 (worst) .. 10 (best).
        """
        if not fps > 0:
            raise ValueError(f"fps must be positive, got {fps}")
        self.path = Path(path)
        self.fps = float(fps)
        self.quality = float(quality)
        self.frame_count = 0
        self.frame_size: Optional[tuple] = None   # (height, width) after padding
        self._writer: Any = None
        self._tmp: Optional[Path] = None
        self._closed = False

    def _open(self) -> None:
        import imageio.v2 as imageio

        directory = self.path.resolve().parent
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".mp4", dir=directory)
        os.close(fd)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        self._tmp = Path(tmp)
        # macro_block_size=2: frames are already even-sized, so imageio must not rescale them
        # (its default 16 would resize e.g. 360 rows to 368 and blur the picture).
        self._writer = imageio.get_writer(tmp, format="FFMPEG", fps=self.fps, codec="libx264",
                                          quality=self.quality, macro_block_size=2,
                                          pixelformat="yuv420p")

    def append(self, frame: np.ndarray) -> None:
        """Encode one frame (``(H, W, 3)`` uint8 RGB; grey, RGBA and float [0, 1] are converted)."""
        if self._closed:
            raise RuntimeError(f"{self.path}: writer already closed")
        frame = pad_to_even(_rgb(frame, "frame"))
        if self.frame_size is None:
            self.frame_size = frame.shape[:2]
            self._open()
        elif frame.shape[:2] != self.frame_size:
            raise ValueError(f"frame size {frame.shape[:2]} differs from the first frame's {self.frame_size}")
        self._writer.append_data(frame)
        self.frame_count += 1

    def close(self) -> Path:
        """Finish the video and move it to ``path``. Raises ValueError if no frame was written."""
        if self._closed:
            return self.path
        self._closed = True
        if self._writer is None:
            raise ValueError(f"{self.path}: no frames were written")
        try:
            self._writer.close()
            os.replace(self._tmp, self.path)
        finally:
            if self._tmp is not None and self._tmp.exists():
                self._tmp.unlink()
        return self.path

    def abort(self) -> None:
        """Discard the video: nothing appears at ``path``."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._writer is not None:
                self._writer.close()
        finally:
            if self._tmp is not None and self._tmp.exists():
                self._tmp.unlink()

    def __enter__(self) -> "Mp4Writer":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
