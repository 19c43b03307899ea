#!/usr/bin/env python3
"""Benchmark the MuJoCo SimBackend: against raw MuJoCo, and against the PyBullet backend.

For every scene the MuJoCo backend builds (``cartpole``, ``ball_plate``, ``panda_table``, ``mobile_table``,
``home``: its camera is the robot's ``head_camera``),
on the same loaded world:

* ``mujoco_raw_steps_per_s``: a bare ``mujoco.mj_step(model, data)`` loop (one call per physics step);
* ``mujoco_backend_steps_per_s``: physics steps per second through ``SimBackend.step`` at the
  default 60 Hz control (4 physics steps per call), the way every caller drives it;
* ``ratio_backend_over_raw``: the two above (target >= 0.9);
* ``*_with_command_*``: the same with a command each control step (raw: one ``ctrl`` write;
  backend: ``set_cart_force`` / ``set_plate_angles`` / ``set_joint_targets`` of the 7 arm joints,
  with their validation);
* ``*_ee_steps_per_s`` (arm scenes): control steps per second of ``set_end_effector_delta`` (1 mm)
  then ``step(1)``: IK (MuJoCo: damped least squares in Python; PyBullet: its C++ IK) plus the
  interpolated joint targets, on both backends;
* ``pybullet_backend_steps_per_s``: the PyBullet backend, same scene, same call pattern;
* ``*_camera_fps``: ``camera_frame`` of the scene's camera (RGB + depth, 320x240) on both
  (MuJoCo: offscreen renderer under ``MUJOCO_GL``, EGL by default; PyBullet: TinyRenderer).

Loops are interleaved and the best of ``--repeats`` is kept (shared machine).

Output: JSON on stdout, a markdown table on stderr. ``python bench/bench_mujoco.py [--quick]``
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

from sim_bridges import make_backend  # noqa: E402
from sim_bridges.contract import Capability  # noqa: E402

# the backend module picks MUJOCO_GL (EGL) before importing mujoco: import mujoco through it
from sim_bridges.mujoco_backend.backend import mujoco  # noqa: E402

SCENES = ("cartpole", "ball_plate", "panda_table", "mobile_table", "home")


def _best_rate(fn, n: int, repeats: int) -> float:
    best = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(n)
        best = max(best, n / (time.perf_counter() - t0))
    return best


def _command(sim):
    if Capability.CART_FORCE in sim.capabilities:
        return lambda: sim.set_cart_force(1.0)
    if Capability.PLATE_ANGLES in sim.capabilities:
        return lambda: sim.set_plate_angles(0.01, -0.01)
    names = [n for n in sim.joint_names if n.startswith("panda_joint")]
    hold = [float(v) for n, v in zip(sim.joint_names, sim.joint_state().position) if n in names]
    return lambda: sim.set_joint_targets(names, hold)


def _ee_rate(sim, n_control: int, repeats: int) -> float:
    best = 0.0
    for _ in range(repeats):
        sim.reset(0)
        t0 = time.perf_counter()
        for i in range(n_control):
            sim.set_end_effector_delta(0.001 if (i // 20) % 2 == 0 else -0.001, 0.0, 0.0)
            sim.step(1)
        best = max(best, n_control / (time.perf_counter() - t0))
    return best


def bench_scene(scene: str, n_steps: int, repeats: int, frames: int) -> dict:
    mj = make_backend("mujoco", physics_rate_hz=240.0, control_rate_hz=60.0)
    pb = make_backend("pybullet", physics_rate_hz=240.0, control_rate_hz=60.0)
    out = {"scene": scene}
    try:
        for sim in (mj, pb):
            sim.load_scene(scene)
        k = mj.physics_steps_per_control
        model, data = mj.model, mj.data
        mj_cmd, pb_cmd = _command(mj), _command(pb)

        if mj._cart is not None:
            act = int(mj._cart[1].actuator)
        elif mj._plate is not None:
            act = int(mj._position_joints[mj._plate.plate_joints[0]].actuator)
        else:
            act = int(mj._position_joints["panda_joint1"].actuator)

        def raw(n: int) -> None:  # one mj_step call per physics step
            step = mujoco.mj_step
            for _ in range(n):
                step(model, data)

        def raw_cmd(n: int) -> None:  # a control write each control period, then k physics steps
            step, ctrl = mujoco.mj_step, data.ctrl
            for _ in range(n // k):
                ctrl[act] = 0.01
                step(model, data, k)

        def backend(sim, cmd=None):
            def run(n: int) -> None:
                step = sim.step
                if cmd is None:
                    for _ in range(n // k):
                        step(1)
                else:
                    for _ in range(n // k):
                        cmd()
                        step(1)
            return run

        loops = (("mujoco_raw_steps_per_s", raw, mj),
                 ("mujoco_backend_steps_per_s", backend(mj), mj),
                 ("mujoco_raw_with_command_steps_per_s", raw_cmd, mj),
                 ("mujoco_backend_with_command_steps_per_s", backend(mj, mj_cmd), mj),
                 ("pybullet_backend_steps_per_s", backend(pb), pb),
                 ("pybullet_backend_with_command_steps_per_s", backend(pb, pb_cmd), pb))
        rates = {key: 0.0 for key, _, _ in loops}
        for _ in range(repeats):  # interleaved
            for key, fn, sim in loops:
                sim.reset(0)
                rates[key] = max(rates[key], _best_rate(fn, n_steps, 1))
        out.update({k_: round(v) for k_, v in rates.items()})
        out["ratio_backend_over_raw"] = round(rates["mujoco_backend_steps_per_s"] / rates["mujoco_raw_steps_per_s"], 3)
        out["ratio_with_command"] = round(rates["mujoco_backend_with_command_steps_per_s"]
                                          / rates["mujoco_raw_with_command_steps_per_s"], 3)
        out["mujoco_over_pybullet"] = round(
            rates["mujoco_backend_steps_per_s"] / rates["pybullet_backend_steps_per_s"], 2)
        if Capability.END_EFFECTOR_DELTA in mj.capabilities:
            for key, sim in (("mujoco_ee_steps_per_s", mj), ("pybullet_ee_steps_per_s", pb)):
                out[key] = round(_ee_rate(sim, max(40, n_steps // (10 * k)), repeats), 1)
        for key, sim in (("mujoco_camera_fps", mj), ("pybullet_camera_fps", pb)):
            if not sim.camera_names:
                out[key] = None
                continue
            name = sim.camera_names[0]
            sim.camera_frame(name)  # warm-up (renderer/context creation)
            t0 = time.perf_counter()
            for _ in range(frames):
                sim.camera_frame(name)
            out[key] = round(frames / (time.perf_counter() - t0), 1)
    finally:
        mj.close()
        pb.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    from rlstack_common.results_record import add_record_argument, command_line, record
    add_record_argument(ap)
    ap.add_argument("--quick", action="store_true", help="fewer steps/frames")
    ap.add_argument("--scenes", nargs="+", default=list(SCENES), choices=SCENES)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    n_steps, frames = (2400, 10) if args.quick else (24000, 40)
    results = [bench_scene(s, n_steps, args.repeats, frames) for s in args.scenes]
    meta = {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "mujoco": mujoco.__version__, "mujoco_gl": os.environ.get("MUJOCO_GL"),
            "n_physics_steps": n_steps, "camera_frames": frames, "repeats": args.repeats}
    summary = {"meta": meta, "results": results}
    print(json.dumps(summary, indent=1))
    if args.record:
        record(args.record, summary, command=command_line())
    rows = ["| scene | raw MuJoCo steps/s | MuJoCo backend steps/s | backend / raw | with a command each control step: "
            "raw / backend / ratio | PyBullet backend steps/s | MuJoCo / PyBullet | camera fps MuJoCo (EGL) | "
            "camera fps PyBullet (Tiny) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        rows.append(f"| {r['scene']} | {r['mujoco_raw_steps_per_s']:,} | {r['mujoco_backend_steps_per_s']:,} | "
                    f"{r['ratio_backend_over_raw']:.3f} | {r['mujoco_raw_with_command_steps_per_s']:,} / "
                    f"{r['mujoco_backend_with_command_steps_per_s']:,} / {r['ratio_with_command']:.3f} | "
                    f"{r['pybullet_backend_steps_per_s']:,} | "
                    f"{r['mujoco_over_pybullet']:.2f} | {r['mujoco_camera_fps']} | {r['pybullet_camera_fps']} |")
    arm = [r for r in results if "mujoco_ee_steps_per_s" in r]
    if arm:
        rows += ["", "| scene | end-effector steps/s MuJoCo (DLS IK) | PyBullet (its IK) |", "|---|---|---|"]
        rows += [f"| {r['scene']} | {r['mujoco_ee_steps_per_s']} | {r['pybullet_ee_steps_per_s']} |" for r in arm]
    print("\n".join(rows), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
