#!/usr/bin/env python3
"""Benchmark the PyBullet SimBackend against raw PyBullet.

For every scene it measures, on the *same* loaded world:

* ``raw_steps_per_s``: a bare ``p.stepSimulation`` loop;
* ``backend_steps_per_s``: physics steps per second through ``SimBackend.step``
  (default 60 Hz control = 4 physics steps per call);
* ``backend_step1_steps_per_s``: ``step(1)`` called once per physics step
  (control rate = physics rate), the worst case for per-call overhead;

and, in ``home``, the RGB-D frame rate of ``camera_frame`` at 320x240 next to
a bare ``getCameraImage`` call with the same matrices.

Raw and backend loops are interleaved and the best of several repeats is
kept, which cancels most noise from other processes on a shared machine.

Output: JSON on stdout, a markdown table on stderr.

Usage::

    python bench/bench_sim_backend.py [--quick] [--scenes cartpole home]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "sim_bridges"))

import pybullet as p  # noqa: E402

from sim_bridges.pybullet_backend import PyBulletBackend  # noqa: E402
from sim_bridges.pybullet_backend.camera import fov_projection, view_matrix  # noqa: E402

SCENES = ("cartpole", "ball_plate", "panda_table", "home")


def _rate(fn, n: int) -> float:
    t0 = time.perf_counter()
    fn(n)
    return n / (time.perf_counter() - t0)


def bench_scene(scene: str, n_steps: int, repeats: int) -> dict:
    """Physics step rates (steps/s) for one scene."""
    sim = PyBulletBackend(physics_rate_hz=240.0, control_rate_hz=60.0)
    sim.load_scene(scene)
    sim.reset(0)
    cid = sim.client_id
    k = sim.physics_steps_per_control

    def raw(n: int) -> None:
        step = p.stepSimulation
        for _ in range(n):
            step(cid)  # the fastest plain form: positional client id

    def backend(n: int) -> None:
        sim.step(n // k)

    def backend_step1(n: int) -> None:
        step = sim.step
        for _ in range(n):
            step(1)

    def timed(fn) -> float:
        # every loop starts from the same state (reset is not timed): the cost of a
        # step depends on the state (contacts, sleeping bodies), so this keeps the
        # comparison fair
        sim.reset(0)
        return _rate(fn, n_steps)

    n_steps -= n_steps % k
    timed(raw)  # warm-up (caches fill)
    best = {"raw": 0.0, "backend": 0.0, "backend_step1": 0.0}
    for _ in range(repeats):
        best["raw"] = max(best["raw"], timed(raw))
        best["backend"] = max(best["backend"], timed(backend))
        sim.set_control_rate(240.0)
        best["backend_step1"] = max(best["backend_step1"], timed(backend_step1))
        sim.set_control_rate(60.0)
    sim.close()
    return {
        "scene": scene,
        "raw_steps_per_s": round(best["raw"], 1),
        "backend_steps_per_s": round(best["backend"], 1),
        "backend_step1_steps_per_s": round(best["backend_step1"], 1),
        "backend_vs_raw": round(best["backend"] / best["raw"], 3),
        "backend_step1_vs_raw": round(best["backend_step1"] / best["raw"], 3),
    }


def bench_camera(scene: str, n_frames: int, repeats: int) -> dict:
    """RGB-D frames per second through camera_frame vs a bare getCameraImage."""
    sim = PyBulletBackend()
    sim.load_scene(scene)
    sim.reset(0)
    name = sim.camera_names[0]
    # the raw call gets the camera's own matrices: its pose and PyBullet's projection of its spec
    spec = sim.camera_spec(name)
    view = view_matrix(sim.camera_pose(name))
    projection = fov_projection(spec, sim.client_id)

    def raw(n: int) -> None:
        for _ in range(n):
            p.getCameraImage(spec.width, spec.height, viewMatrix=view, projectionMatrix=projection,
                             renderer=p.ER_TINY_RENDERER, flags=p.ER_NO_SEGMENTATION_MASK, shadow=0,
                             physicsClientId=sim.client_id)

    def backend(n: int) -> None:
        for _ in range(n):
            sim.camera_frame(name)

    best_raw = best_backend = 0.0
    for _ in range(repeats):
        best_raw = max(best_raw, _rate(raw, n_frames))
        best_backend = max(best_backend, _rate(backend, n_frames))
    sim.close()
    return {
        "scene": scene,
        "camera": name,
        "resolution": f"{spec.width}x{spec.height}",
        "raw_fps": round(best_raw, 2),
        "backend_fps": round(best_backend, 2),
        "backend_vs_raw": round(best_backend / best_raw, 3),
    }


def to_markdown(result: dict) -> str:
    lines = [
        "| scene | raw stepSimulation (steps/s) | backend step() (steps/s) | ratio "
        "| step(1) per physics step (steps/s) | ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in result["physics"]:
        lines.append(
            f"| {r['scene']} | {r['raw_steps_per_s']:.0f} | {r['backend_steps_per_s']:.0f} | "
            f"{r['backend_vs_raw']:.3f} | {r['backend_step1_steps_per_s']:.0f} | {r['backend_step1_vs_raw']:.3f} |"
        )
    c = result["camera"]
    if c:
        lines += [
            "",
            "| scene | camera | resolution | raw getCameraImage (fps) | camera_frame() (fps) | ratio |",
            "|---|---|---|---:|---:|---:|",
            f"| {c['scene']} | {c['camera']} | {c['resolution']} | {c['raw_fps']:.1f} | {c['backend_fps']:.1f} | "
            f"{c['backend_vs_raw']:.3f} |",
        ]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    from rlstack_common.results_record import add_record_argument, command_line, record
    add_record_argument(parser)
    parser.add_argument("--quick", action="store_true", help="short run (a few seconds)")
    parser.add_argument("--scenes", nargs="+", default=list(SCENES), choices=SCENES)
    args = parser.parse_args(argv)
    n_steps, repeats, n_frames = (2000, 3, 10) if args.quick else (20000, 5, 60)
    result = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "physics_rate_hz": 240.0,
        "control_rate_hz": 60.0,
        "n_steps": n_steps,
        "repeats": repeats,
        "physics": [bench_scene(s, n_steps, repeats) for s in args.scenes],
        "camera": bench_camera("home", n_frames, repeats) if "home" in args.scenes else None,
    }
    print(json.dumps(result, indent=2))
    if args.record:
        record(args.record, result, command=command_line())
    print(to_markdown(result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
