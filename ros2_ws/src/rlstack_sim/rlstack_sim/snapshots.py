"""Render one camera frame and one top-down view per scene into PNG files (no ROS needed).

    python -m rlstack_sim.snapshots [--out docs/images] [--scenes home ...] [--seed 0] [--settle 30]

Writes ``<out>/<scene>_camera.png`` (the scene's first camera, through the backend's
camera API, exactly what ``/<camera>/image_raw`` publishes) and ``<out>/<scene>_topdown.png``
(a camera placed above the scene, a map view: image right = world +x, image up = world +y).
PNGs are written with zlib + struct (no imaging library needed).
"""

from __future__ import annotations

import argparse
import math
import struct
import sys
import zlib
from pathlib import Path

import numpy as np

#: scene -> (centre x, y, z of the view, width of the ground area to show in m)
TOP_DOWN_VIEWS = {
    "cartpole": ((0.0, 0.0, 1.0), 3.0),
    "ball_plate": ((0.0, 0.0, 0.30), 0.5),
    "panda_table": ((-0.1, 0.0, 0.40), 1.6),
    "home": ((0.0, 0.0, 0.0), 8.4),
}


def write_png(path: Path, rgb: np.ndarray) -> None:
    """Minimal PNG writer: 8-bit RGB, filter 'none' per row, zlib level 9."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[row].tobytes() for row in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    path.write_bytes(png)


def top_down(sim, scene: str, width: int = 480, height: int = 360) -> np.ndarray:
    """RGB image from a narrow-FOV camera above the scene, looking straight down (image up = world +y),
    through the backend's ``render_view``."""
    from sim_bridges.contract import Pose
    from sim_bridges.robots.spec import CameraSpec

    (cx, cy, cz), extent = TOP_DOWN_VIEWS.get(scene, ((0.0, 0.0, 0.0), 6.0))
    fov = 30.0
    # the ground area spans `extent` across the image width
    dist = 0.5 * extent / math.tan(math.radians(0.5 * fov) * width / height)
    # optical frame: z down (world -z), x = world +x, y (image down) = world -y: a half turn about x
    view = CameraSpec(name="top_down", pose=Pose((cx, cy, cz + dist), (1.0, 0.0, 0.0, 0.0)), width=width,
                      height=height, vfov_rad=math.radians(fov), near=0.1 * dist, far=dist + 5.0)
    return np.asarray(sim.render_view(view).rgb)


def render_scene(scene: str, out: Path, seed: int = 0, settle_steps: int = 30) -> list:
    from sim_bridges import make_backend

    with make_backend("pybullet") as sim:
        sim.load_scene(scene, seed=seed)
        sim.step(settle_steps)  # let objects come to rest
        written = []
        if sim.camera_names:
            frame = sim.camera_frame(sim.camera_names[0])
            path = out / f"{scene}_camera.png"
            write_png(path, frame.rgb)
            written.append(path)
        path = out / f"{scene}_topdown.png"
        write_png(path, top_down(sim, scene))
        written.append(path)
        return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    parser.add_argument("--scenes", nargs="+", default=list(TOP_DOWN_VIEWS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--settle", type=int, default=30, help="control steps before rendering")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for scene in args.scenes:
        for path in render_scene(scene, args.out, args.seed, args.settle):
            print(f"{path} ({path.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
