"""A top-down, rviz-like view of the map, the robot, its plan and the objects (numpy + Pillow).

Used for the demo video next to the camera image. Pure: no rclpy, no ROS messages; the caller
passes what it took from ``/map``, ``/odom``, ``/plan`` and the semantic map.

Conventions:

* the occupancy grid is ``nav_msgs/OccupancyGrid``'s: ``grid[row, col]`` with row 0 at the map
  origin (lowest y) and col 0 at the lowest x; values ``-1`` unknown, ``0`` free, ``100``
  occupied, in between a probability; ``origin = (x, y[, yaw])`` is the pose of the lower-left
  corner of cell (0, 0); ``resolution`` in metres per cell;
* the image shows the map frame with x to the right and y up (image rows grow downward, so a
  larger y is higher in the picture), as rviz's top-down view does;
* :meth:`OverheadView.world_to_pixel` gives the continuous pixel position ``(u, v)`` of a map-frame
  point (``u`` column, ``v`` row; the pixel holding it is ``(floor(v), floor(u))``).
"""

from __future__ import annotations

import math
from typing import Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
from PIL import Image, ImageDraw, ImageFont

RGB = Tuple[int, int, int]

# rviz-like colours ("map" colour scheme on a dark background).
BACKGROUND: RGB = (48, 48, 48)
UNKNOWN: RGB = (112, 137, 134)
FREE: RGB = (240, 240, 240)
OCCUPIED: RGB = (0, 0, 0)
BAR: RGB = (24, 24, 24)
TEXT: RGB = (235, 235, 235)
ROBOT: RGB = (40, 120, 255)
ROBOT_OUTLINE: RGB = (10, 40, 110)
HEADING: RGB = (255, 255, 255)
PATH: RGB = (0, 190, 60)
TARGET: RGB = (230, 40, 40)
HIGHLIGHT: RGB = (255, 225, 60)

#: An object marker: (x, y, label, rgb).
ObjectMarker = Tuple[float, float, str, RGB]
#: A target marker: (x, y) or (x, y, label).
TargetMarker = Union[Tuple[float, float], Tuple[float, float, str]]


def _font(size: int) -> ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)  # scalable font (Pillow >= 10.1 with FreeType)
    except (TypeError, OSError):
        return ImageFont.load_default()


def occupancy_colors(grid: np.ndarray) -> np.ndarray:
    """``(H, W)`` occupancy values -> ``(H, W, 3)`` uint8 colours, same row order."""
    grid = np.asarray(grid)
    values = grid.astype(np.int16)
    known = (values >= 0) & (values <= 100)
    p = np.clip(values, 0, 100).astype(np.float32)[..., None] / 100.0
    free, occupied = np.array(FREE, np.float32), np.array(OCCUPIED, np.float32)
    out = np.rint(free * (1.0 - p) + occupied * p).astype(np.uint8)
    out[~known] = UNKNOWN
    return out


Box = Tuple[float, float, float, float]  # left, top, right, bottom (pixels)


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_labels(anchors: Sequence[Tuple[float, float]], sizes: Sequence[Tuple[float, float]],
                 area: Box, obstacles: Sequence[Box] = (), gap: float = 6.0,
                 rings: int = 4) -> List[Optional[Box]]:
    """Boxes for text labels next to their anchor points such that no two boxes overlap.

    Greedy, in the given order (put the label that must be shown first): each label tries
    positions right, left, above, below and at the four diagonals of its anchor, ``gap`` pixels
    away, then the same positions further out (``rings`` distances in all), and takes the first
    box that lies inside ``area`` and overlaps no box placed before it and no ``obstacles``
    (e.g. the object markers). A label with no free position gets ``None`` (the caller leaves it
    out rather than draw it over another one).

    :param anchors: ``(u, v)`` pixel positions of the things labelled.
    :param sizes: ``(width, height)`` of each label's text box, pixels.
    :param area: ``(left, top, right, bottom)`` the labels must stay inside.
    """
    placed: List[Box] = []
    out: List[Optional[Box]] = []
    for (u, v), (w, h) in zip(anchors, sizes):
        choice = None
        for ring in range(rings):
            d = gap + ring * (h + 2)
            candidates = [
                (u + d, v - h / 2), (u - d - w, v - h / 2), (u - w / 2, v - d - h), (u - w / 2, v + d),
                (u + d, v - d - h), (u - d - w, v - d - h), (u + d, v + d), (u - d - w, v + d),
            ]
            for left, top in candidates:
                box = (left, top, left + w, top + h)
                if box[0] < area[0] or box[1] < area[1] or box[2] > area[2] or box[3] > area[3]:
                    continue
                if any(_overlaps(box, other) for other in placed) or any(_overlaps(box, o) for o in obstacles):
                    continue
                choice = box
                break
            if choice is not None:
                break
        if choice is not None:
            placed.append(choice)
        out.append(choice)
    return out


class OverheadView:
    """Renders frames of one map; the map background is rasterised once and reused per frame.

    The layout is fixed when the view is made (so a video does not jump between frames): a title
    bar of ``title_height`` pixels at the top, a caption bar of ``caption_height`` at the bottom
    (0 leaves a bar out), and the world window ``bounds = (xmin, ymin, xmax, ymax)`` (default: the
    map's extent) scaled uniformly to fit the rest, less ``margin``, centred.
    """

    def __init__(
        self,
        grid: np.ndarray,
        resolution: float,
        origin: Sequence[float] = (0.0, 0.0),
        size: Tuple[int, int] = (480, 360),
        *,
        bounds: Optional[Tuple[float, float, float, float]] = None,
        title_height: int = 24,
        caption_height: int = 0,
        margin: int = 6,
    ) -> None:
        """
        :param grid: occupancy values, ``(rows, cols)``, nav_msgs row order (row 0 = lowest y).
        :param resolution: metres per cell.
        :param origin: ``(x, y)`` or ``(x, y, yaw)`` of the lower-left corner of cell (0, 0).
        :param size: output ``(width, height)`` in pixels.
        """
        self.width, self.height = int(size[0]), int(size[1])
        if self.width < 8 or self.height < 8:
            raise ValueError(f"image size must be at least 8x8, got {size}")
        self.title_height = int(title_height)
        self.caption_height = int(caption_height)
        self.margin = int(margin)
        if self.title_height + self.caption_height + 2 * self.margin >= self.height - 4:
            raise ValueError("title, caption and margins leave no room for the map")
        self._bounds_arg = bounds
        self._font = _font(max(10, min(16, self.title_height - 8)) if self.title_height else 12)
        self._label_font = _font(11)
        self.last_labels: List[Tuple[str, Box]] = []
        self.set_map(grid, resolution, origin)

    # ------------------------------------------------------------------ map and layout
    def set_map(self, grid: np.ndarray, resolution: float, origin: Sequence[float] = (0.0, 0.0)) -> None:
        """Replace the map (e.g. a new ``/map``); recomputes the layout unless ``bounds`` was fixed."""
        grid = np.asarray(grid)
        if grid.ndim != 2 or grid.size == 0:
            raise ValueError(f"grid must be a non-empty 2-D array, got shape {grid.shape}")
        if not (math.isfinite(resolution) and resolution > 0):
            raise ValueError(f"resolution must be a positive number of metres, got {resolution}")
        if len(origin) not in (2, 3):
            raise ValueError(f"origin must be (x, y) or (x, y, yaw), got {origin}")
        self.grid = grid
        self.resolution = float(resolution)
        self.origin = (float(origin[0]), float(origin[1]), float(origin[2]) if len(origin) == 3 else 0.0)
        rows, cols = grid.shape
        ox, oy, yaw = self.origin
        c, s = math.cos(yaw), math.sin(yaw)
        corners = [(ox + c * u - s * v, oy + s * u + c * v)
                   for u, v in ((0, 0), (cols * resolution, 0), (0, rows * resolution),
                                (cols * resolution, rows * resolution))]
        if self._bounds_arg is not None:
            xmin, ymin, xmax, ymax = (float(b) for b in self._bounds_arg)
        else:
            xs, ys = [p[0] for p in corners], [p[1] for p in corners]
            xmin, xmax, ymin, ymax = min(xs), max(xs), min(ys), max(ys)
        if not (xmax > xmin and ymax > ymin):
            raise ValueError(f"empty view bounds {(xmin, ymin, xmax, ymax)}")
        self.bounds = (xmin, ymin, xmax, ymax)

        area_w = self.width - 2 * self.margin
        area_h = self.height - self.title_height - self.caption_height - 2 * self.margin
        self.scale = min(area_w / (xmax - xmin), area_h / (ymax - ymin))  # pixels per metre
        used_w, used_h = (xmax - xmin) * self.scale, (ymax - ymin) * self.scale
        self._left = self.margin + (area_w - used_w) / 2.0
        self._top = self.title_height + self.margin + (area_h - used_h) / 2.0
        self._background = self._rasterise()

    def world_to_pixel(self, x: float, y: float) -> Tuple[float, float]:
        """Map-frame metres -> continuous pixel coordinates ``(u, v)`` (column, row)."""
        xmin, _, _, ymax = self.bounds
        return self._left + (x - xmin) * self.scale, self._top + (ymax - y) * self.scale

    def pixel_to_world(self, u: float, v: float) -> Tuple[float, float]:
        xmin, _, _, ymax = self.bounds
        return xmin + (u - self._left) / self.scale, ymax - (v - self._top) / self.scale

    def _rasterise(self) -> np.ndarray:
        """The background: every pixel centre looked up in the grid (exact nearest-cell sampling,
        consistent with :meth:`world_to_pixel` by construction)."""
        image = np.empty((self.height, self.width, 3), np.uint8)
        image[:] = BACKGROUND
        colors = occupancy_colors(self.grid)
        uu, vv = np.meshgrid(np.arange(self.width) + 0.5, np.arange(self.height) + 0.5)
        x, y = self.pixel_to_world(uu, vv)
        ox, oy, yaw = self.origin
        c, s = math.cos(yaw), math.sin(yaw)
        dx, dy = x - ox, y - oy
        col = np.floor((c * dx + s * dy) / self.resolution).astype(np.int64)
        row = np.floor((-s * dx + c * dy) / self.resolution).astype(np.int64)
        rows, cols = self.grid.shape
        inside = (row >= 0) & (row < rows) & (col >= 0) & (col < cols)
        inside[: self.title_height] = False
        if self.caption_height:
            inside[self.height - self.caption_height:] = False
        image[inside] = colors[row[inside], col[inside]]
        return image

    # ------------------------------------------------------------------ frames
    def render(
        self,
        robot: Optional[Tuple[float, float, float]] = None,
        robot_radius: float = 0.2,
        path: Optional[Union[np.ndarray, Sequence[Sequence[float]]]] = None,
        objects: Iterable[ObjectMarker] = (),
        target: Optional[TargetMarker] = None,
        title: str = "",
        caption: str = "",
        highlight: Optional[str] = None,
    ) -> np.ndarray:
        """One frame as an ``(height, width, 3)`` uint8 RGB array.

        :param robot: ``(x, y, yaw)`` of the base in the map frame (drawn as its footprint circle
            with a heading line), or None.
        :param path: the planned path, ``(N, 2)`` map-frame points.
        :param objects: markers ``(x, y, label, rgb)`` (e.g. the semantic map's objects).
        :param target: the goal / drop-off ``(x, y)`` or ``(x, y, label)``, drawn as a red ring.
        :param highlight: an object label to emphasise (the object being fetched): its marker gets a
            ring and its label is placed first and drawn last, so it is never hidden.

        Labels never overlap each other or the object markers (:func:`place_labels`); one that
        finds no free spot is left out. :attr:`last_labels` lists the placed ``(text, box)``.
        """
        image = Image.fromarray(self._background.copy())
        draw = ImageDraw.Draw(image)

        if path is not None:
            points = np.asarray(path, dtype=float).reshape(-1, 2)
            if len(points) >= 2:
                draw.line([self.world_to_pixel(px, py) for px, py in points], fill=PATH, width=2, joint="curve")

        objects = list(objects)
        markers: List[Box] = []
        labels: List[Tuple[str, float, float, bool]] = []  # text, u, v, highlighted
        half = 4
        for x, y, label, rgb in objects:
            u, v = self.world_to_pixel(x, y)
            markers.append((u - half, v - half, u + half, v + half))
            draw.rectangle([u - half, v - half, u + half, v + half], fill=tuple(int(c) for c in rgb),
                           outline=(20, 20, 20))
            is_target = bool(highlight) and label == highlight
            if is_target:
                draw.ellipse([u - 8, v - 8, u + 8, v + 8], outline=HIGHLIGHT, width=2)
            if label:
                labels.append((label, u, v, is_target))

        if target is not None:
            u, v = self.world_to_pixel(target[0], target[1])
            r = 7
            draw.ellipse([u - r, v - r, u + r, v + r], outline=TARGET, width=2)
            draw.line([(u - r - 3, v), (u + r + 3, v)], fill=TARGET, width=1)
            draw.line([(u, v - r - 3), (u, v + r + 3)], fill=TARGET, width=1)
            markers.append((u - r, v - r, u + r, v + r))
            if len(target) > 2 and target[2]:
                labels.append((str(target[2]), u, v, False))

        if robot is not None:
            x, y, yaw = (float(v) for v in robot)
            u, v = self.world_to_pixel(x, y)
            r = max(3.0, robot_radius * self.scale)
            draw.ellipse([u - r, v - r, u + r, v + r], fill=ROBOT, outline=ROBOT_OUTLINE, width=1)
            # Image rows grow downward: +y in the map is -v in the image.
            draw.line([(u, v), (u + r * math.cos(yaw), v - r * math.sin(yaw))], fill=HEADING, width=2)

        self._draw_labels(draw, labels, markers)
        if self.title_height:
            draw.rectangle([0, 0, self.width, self.title_height - 1], fill=BAR)
            if title:
                draw.text((6, self.title_height / 2), title, fill=TEXT, font=self._font, anchor="lm")
        if self.caption_height:
            top = self.height - self.caption_height
            draw.rectangle([0, top, self.width, self.height], fill=BAR)
            if caption:
                draw.text((6, top + self.caption_height / 2), caption, fill=TEXT, font=self._label_font, anchor="lm")
        return np.asarray(image, dtype=np.uint8)

    def _draw_labels(self, draw: ImageDraw.ImageDraw, labels: List[Tuple[str, float, float, bool]],
                     markers: List[Box]) -> None:
        """Place (highlighted first) and draw (highlighted last, on top) labels that never overlap."""
        order = sorted(range(len(labels)), key=lambda i: not labels[i][3])  # stable: highlighted first
        sizes, offsets = [], []
        for i in order:
            left, top, right, bottom = draw.textbbox((0, 0), labels[i][0], font=self._label_font, stroke_width=2,
                                                     anchor="la")
            sizes.append((right - left, bottom - top))
            offsets.append((left, top))
        area = (0.0, float(self.title_height), float(self.width), float(self.height - self.caption_height))
        boxes = place_labels([labels[i][1:3] for i in order], sizes, area, obstacles=markers)
        self.last_labels = []
        drawn = [(labels[i], box, off) for i, box, off in zip(order, boxes, offsets) if box is not None]
        for (text, u, v, highlighted), box, (dx, dy) in reversed(drawn):  # highlighted drawn last: on top
            cx, cy = min(max(u, box[0]), box[2]), min(max(v, box[1]), box[3])
            if math.hypot(cx - u, cy - v) > 10:  # displaced: a leader line to what it names
                draw.line([(u, v), (cx, cy)], fill=HIGHLIGHT if highlighted else (200, 200, 200), width=1)
            self._label(draw, (box[0] - dx, box[1] - dy), text, highlighted)
            self.last_labels.append((text, box))

    def _label(self, draw: ImageDraw.ImageDraw, xy: Tuple[float, float], text: str, highlighted: bool = False) -> None:
        # Dark outline so labels stay readable on free (light) and unknown (grey) cells alike.
        draw.text(xy, text, fill=HIGHLIGHT if highlighted else (255, 255, 255), font=self._label_font,
                  stroke_width=2, stroke_fill=(0, 0, 0), anchor="la")


def render_overhead(
    grid: np.ndarray,
    resolution: float,
    origin: Sequence[float],
    robot: Optional[Tuple[float, float, float]] = None,
    robot_radius: float = 0.2,
    path: Optional[Union[np.ndarray, Sequence[Sequence[float]]]] = None,
    objects: Iterable[ObjectMarker] = (),
    target: Optional[TargetMarker] = None,
    title: str = "",
    caption: str = "",
    size: Tuple[int, int] = (480, 360),
) -> np.ndarray:
    """One-off frame; for a video make one :class:`OverheadView` and call ``render`` per frame."""
    view = OverheadView(grid, resolution, origin, size, caption_height=20 if caption else 0)
    return view.render(robot, robot_radius, path, objects, target, title, caption)
