#!/usr/bin/env python3
"""How the semantic map names objects lying on the floor, seen by the fetch robot's head camera.

    python tools/probes/floor_object_scores.py [--layouts 6] [--no-noise] [--json out.json]

For each coloured cube, ball and cylinder lying on the floor in ``home`` layouts 1000.., the head
camera looks from 2 m and from 1 m (the fetch's floor view distance), twice each from a random
free direction; 5 frames (the base turned by ~3 deg between them) go into a fresh map through the
default pipeline, with the bridge's depth noise model unless ``--no-noise``. Printed per view set:
the map's score for "the <colour> cube" and for the object's own words at the object (None: no
map entry within 15 cm); then, per shape and distance, how many score >= 0.85 (the fetch's
``min_match_score``) as a cube. In process, no ROS. Workstation side (PyBullet).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layouts", type=int, default=6)
    ap.add_argument("--no-noise", action="store_true", help="exact rendered depth")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)

    from rlstack_perception.evaluate_grasp_pose import head_camera_in_base, head_camera_view
    from rlstack_perception.frame import Frame
    from rlstack_perception.pipeline import Pipeline
    from rlstack_perception.simtools import label_of, target_objects
    from sim_bridges.pybullet_backend import PyBulletBackend
    from sim_bridges.sensor_noise import DepthNoise

    noise = DepthNoise(enabled=not args.no_noise)
    rng = np.random.default_rng(3)
    sim = PyBulletBackend()
    sim.load_scene("home")
    camera = head_camera_in_base(sim)
    intr = camera[2]
    pipe = Pipeline.default()
    rows = []
    for layout in range(args.layouts):
        sim.reset(1000 + layout)
        for name, state in target_objects(sim).items():
            c = np.asarray(state.pose.position, float)
            if c[2] > 0.2:
                continue                                   # on a table
            colour, shape = label_of(state).split()
            for d in (2.0, 1.0):
                for _ in range(2):
                    az0 = rng.uniform(-math.pi, math.pi)
                    frames = []
                    for _ in range(30):
                        view = head_camera_view(sim, c, d, az0 + rng.normal(0, 0.05), camera)
                        if view is None:
                            continue
                        depth, _ = noise.apply(view.frame.depth, intr.fx, intr.fy, intr.cx, intr.cy, rng)
                        frames.append(Frame(view.frame.rgb, depth, intr.fx, intr.fy, intr.cx, intr.cy,
                                            view.camera_rotation, view.camera_translation))
                        if len(frames) == 5:
                            break
                    if len(frames) < 5:
                        continue                           # no free place to look from
                    pipe.map.clear()
                    for f in frames:
                        pipe.process(f)

                    def score(text):
                        near = [s for e, s in pipe.query(text, max_results=5, threshold=False)
                                if np.linalg.norm(e.position[:2] - c[:2]) < 0.15]
                        return round(max(near), 3) if near else None

                    row = {"layout": 1000 + layout, "object": name, "shape": shape, "distance_m": d,
                           "as_cube": score(f"the {colour} cube"), "own_words": score(f"the {colour} {shape}")}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    summary = {}
    for d in (2.0, 1.0):
        for shape in ("cube", "ball", "cylinder"):
            r = [x for x in rows if x["distance_m"] == d and x["shape"] == shape]
            seen = [x for x in r if x["as_cube"] is not None]
            summary[f"{shape} at {d:g} m"] = {"views": len(r), "in_the_map": len(seen),
                                              "as_cube_ge_0.85": sum(x["as_cube"] >= 0.85 for x in seen)}
    print("| objects, distance | view sets | in the map | 'the <colour> cube' >= 0.85 |", file=sys.stderr)
    print("|---|---|---|---|", file=sys.stderr)
    for k, v in summary.items():
        print(f"| {k} | {v['views']} | {v['in_the_map']} | {v['as_cube_ge_0.85']} |", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "summary": summary, "depth_noise": not args.no_noise}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
