"""Generate an occupancy map from a scene's static geometry (axis-aligned boxes).

``ros2 run rlstack_nav make_home_map --out maps/home`` writes ``maps/home.yaml`` + ``maps/home.pgm``
from ``sim_bridges``' ``home`` scene (its ``static_occupancy()`` boxes: walls and furniture).
Every cell that overlaps a box is occupied; the rest of the boxes' bounding rectangle is free; a
``margin`` ring around it is unknown. The map frame is the scene's world frame (which is also the
sim's ``odom`` frame): the robot starts at map (0, 0) facing +x.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Iterable, List, Optional, Sequence

import numpy as np

from rlstack_nav.grid import FREE, OCCUPIED, UNKNOWN, OccupancyGrid
from rlstack_nav.map_io import save_map


def map_from_boxes(boxes: Iterable, resolution: float = 0.05, margin: float = 0.2,
                   min_height: float = 0.0) -> OccupancyGrid:
    """Rasterise boxes with ``x_min, x_max, y_min, y_max, height`` attributes (``OccupancyBox``).

    :param resolution: m per cell
    :param margin: unknown border around the boxes' bounding rectangle, m
    :param min_height: boxes lower than this (m) are ignored (they do not block the robot)
    """
    boxes = [b for b in boxes if float(getattr(b, "height", 1.0)) >= min_height]
    if not boxes:
        raise ValueError("no boxes to rasterise")
    x0 = min(float(b.x_min) for b in boxes)
    x1 = max(float(b.x_max) for b in boxes)
    y0 = min(float(b.y_min) for b in boxes)
    y1 = max(float(b.y_max) for b in boxes)
    m_cells = int(math.ceil(margin / resolution))
    # snap the origin to the resolution so that box edges fall on cell borders where they can
    ox = math.floor(x0 / resolution + 1e-9) * resolution - m_cells * resolution
    oy = math.floor(y0 / resolution + 1e-9) * resolution - m_cells * resolution
    w = int(math.ceil((x1 - ox) / resolution - 1e-9)) + m_cells
    h = int(math.ceil((y1 - oy) / resolution - 1e-9)) + m_cells
    grid = OccupancyGrid(np.full((h, w), UNKNOWN, np.int8), resolution, (round(ox, 9), round(oy, 9), 0.0))
    grid.data[m_cells:h - m_cells, m_cells:w - m_cells] = FREE
    for b in boxes:
        grid.fill_box(float(b.x_min), float(b.x_max), float(b.y_min), float(b.y_max), OCCUPIED)
    return grid


def scene_boxes(scene: str = "home") -> List:
    """The scene's static occupancy boxes, from its spec (no simulator is started)."""
    from sim_bridges import make_scene

    spec = make_scene(scene)
    if not spec.occupancy:
        raise ValueError(f"scene '{scene}' has no static occupancy")
    return list(spec.occupancy)


def home_map(resolution: float = 0.05, margin: float = 0.2) -> OccupancyGrid:
    return map_from_boxes(scene_boxes("home"), resolution, margin)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="make_home_map", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="maps/home", help="output prefix: writes PREFIX.yaml and PREFIX.pgm")
    ap.add_argument("--scene", default="home", help="sim_bridges scene name (default: home)")
    ap.add_argument("--resolution", type=float, default=0.05, help="m per cell (default 0.05)")
    ap.add_argument("--margin", type=float, default=0.2, help="unknown border, m (default 0.2)")
    args = ap.parse_args(argv)
    try:
        grid = map_from_boxes(scene_boxes(args.scene), args.resolution, args.margin)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    yml, pgm = save_map(grid, args.out, comment=f"rlstack_nav make_home_map --scene {args.scene} "
                                                f"--resolution {args.resolution:g} --margin {args.margin:g}")
    occ = int((grid.data == OCCUPIED).sum())
    print(f"wrote {yml} and {pgm}: {grid.width} x {grid.height} cells at {grid.resolution:g} m, "
          f"origin {grid.origin[:2]}, {occ} occupied cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
