"""Isaac Sim conversion helpers (pure numpy; Isaac Sim itself is never imported or needed)."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

from sim_bridges.contract import CameraIntrinsics, Pose
from sim_bridges.geometry import backproject_pixel, look_at_optical, quat_from_rpy, quat_to_matrix
from sim_bridges.isaac import (
    JointOrder,
    depth_from_distance_to_camera,
    intrinsics_from_usd_camera,
    optical_from_usd_camera,
    quat_wxyz_to_xyzw,
    quat_xyzw_to_wxyz,
    require_isaacsim,
    usd_camera_from_optical,
    usd_camera_params,
    wheel_velocity_targets,
)
from sim_bridges.robots.spec import CameraSpec, DiffDriveParams


def test_quaternion_order_round_trip_and_meaning():
    q = quat_from_rpy(0.3, -0.2, 1.1)  # xyzw
    wxyz = quat_xyzw_to_wxyz(q)
    assert wxyz[0] == pytest.approx(q[3]) and np.allclose(wxyz[1:], q[:3])
    np.testing.assert_array_equal(quat_wxyz_to_xyzw(wxyz), q)
    # batched, and the identity in both orders
    np.testing.assert_array_equal(quat_xyzw_to_wxyz([[0, 0, 0, 1], [1, 0, 0, 0]]), [[1, 0, 0, 0], [0, 1, 0, 0]])
    with pytest.raises(ValueError):
        quat_xyzw_to_wxyz([0, 0, 1])


def test_usd_camera_looks_down_minus_z_with_y_up():
    optical = look_at_optical([1.0, 2.0, 1.5], [3.0, 2.0, 0.5])
    usd = usd_camera_from_optical(optical)
    r_opt, r_usd = quat_to_matrix(optical.orientation), quat_to_matrix(usd.orientation)
    np.testing.assert_allclose(-r_usd[:, 2], r_opt[:, 2], atol=1e-12)  # same viewing direction
    np.testing.assert_allclose(r_usd[:, 1], -r_opt[:, 1], atol=1e-12)  # USD y up = optical -y (down)
    np.testing.assert_allclose(r_usd[:, 0], r_opt[:, 0], atol=1e-12)  # x right in both
    assert r_usd[2, 1] > 0  # this camera's "up" really points up in the world
    back = optical_from_usd_camera(usd)
    np.testing.assert_allclose(quat_to_matrix(back.orientation), r_opt, atol=1e-12)
    np.testing.assert_array_equal(back.position, optical.position)


def test_usd_camera_params_reproduce_the_spec_intrinsics():
    spec = CameraSpec(name="head", pose=Pose([0, 0, 0]), width=320, height=240, vfov_rad=math.radians(60))
    params = usd_camera_params(spec)
    k = intrinsics_from_usd_camera(spec.width, spec.height, params["focal_length"], params["horizontal_aperture"],
                                   params["vertical_aperture"])
    ref = CameraIntrinsics.from_vertical_fov(spec.width, spec.height, spec.vfov_rad)
    assert (k.fx, k.fy, k.cx, k.cy) == pytest.approx((ref.fx, ref.fy, ref.cx, ref.cy))
    assert k.fx == pytest.approx(k.fy)  # square pixels
    assert params["clipping_range"] == (spec.near, spec.far)
    with pytest.raises(ValueError):
        usd_camera_params(spec, focal_length=0.0)
    with pytest.raises(ValueError):
        intrinsics_from_usd_camera(320, 240, 24.0, 0.0, 1.0)


def test_ray_length_to_optical_depth():
    k = CameraIntrinsics.from_vertical_fov(64, 48, math.radians(60))
    pose = Pose([0, 0, 0])  # optical frame = world
    # a plane z = 2 in front of the camera: ray length to each pixel's point
    uu, vv = np.meshgrid(np.arange(64), np.arange(48))
    rays = np.stack([(uu - k.cx) / k.fx, (vv - k.cy) / k.fy, np.ones_like(uu, dtype=float)], -1)
    distance = 2.0 * np.linalg.norm(rays, axis=-1)
    distance[0, 0] = np.inf  # no return
    depth = depth_from_distance_to_camera(distance, k)
    assert np.isnan(depth[0, 0])
    np.testing.assert_allclose(depth[1:, 1:], 2.0, rtol=1e-6)
    p = backproject_pixel(10, 7, float(depth[7, 10]), k, pose)
    assert p[2] == pytest.approx(2.0, rel=1e-6)
    with pytest.raises(ValueError):
        depth_from_distance_to_camera(distance[:10], k)


def test_wheel_targets_match_the_contract_and_respect_the_limit():
    dd = DiffDriveParams(wheel_radius=0.08, track_width=0.42, max_wheel_speed=20.0)
    left, right = wheel_velocity_targets(0.4, 0.5, dd)
    assert left == pytest.approx((0.4 - 0.5 * 0.21) / 0.08) and right == pytest.approx((0.4 + 0.5 * 0.21) / 0.08)
    # Isaac's DifferentialController formula: ((2v - w b) / 2r, (2v + w b) / 2r)
    assert left == pytest.approx((2 * 0.4 - 0.5 * 0.42) / (2 * 0.08))
    fast_l, fast_r = wheel_velocity_targets(3.0, 2.0, dd)
    assert max(abs(fast_l), abs(fast_r)) == pytest.approx(20.0)
    raw_l, raw_r = (3.0 - 0.42) / 0.08, (3.0 + 0.42) / 0.08
    assert fast_l / fast_r == pytest.approx(raw_l / raw_r)  # curvature kept
    with pytest.raises(ValueError):
        wheel_velocity_targets(float("nan"), 0.0, dd)


def test_joint_order_maps_by_name():
    urdf = ["left_wheel_joint", "right_wheel_joint", "panda_joint1", "panda_joint2"]
    physx = ["panda_joint1", "left_wheel_joint", "right_wheel_joint", "caster", "panda_joint2"]
    order = JointOrder(urdf, physx)
    sim_values = np.array([10.0, 1.0, 2.0, 99.0, 20.0])
    np.testing.assert_array_equal(order.from_sim(sim_values), [1.0, 2.0, 10.0, 20.0])
    np.testing.assert_array_equal(order.to_sim([1.0, 2.0, 10.0, 20.0], fill=np.zeros(5)), [10, 1, 2, 0, 20])
    np.testing.assert_array_equal(order.sim_indices, [1, 2, 0, 4])
    with pytest.raises(ValueError, match="panda_joint7"):
        JointOrder(urdf + ["panda_joint7"], physx)
    with pytest.raises(ValueError):
        order.from_sim([1.0, 2.0])


def test_missing_isaac_sim_is_one_clear_line():
    if importlib.util.find_spec("isaacsim") is not None:  # a machine with Isaac Sim: no error then
        require_isaacsim()
        return
    with pytest.raises(RuntimeError) as err:
        require_isaacsim()
    message = str(err.value)
    assert "\n" not in message and "isaacsim" in message and "pybullet" in message and "mujoco" in message


# ------------------------------------------------------------ the backend module and launcher (lazy imports)
def test_object_prim_args_map_every_shape_and_static_geometry():
    from sim_bridges.isaac import object_prim_args
    from sim_bridges.scenes import make_scene

    spec = make_scene("home")
    by_name = {o.name: o for o in spec.objects + spec.static}
    cls, kw = object_prim_args(by_name["red_cube"], "/World/objects/red_cube")
    assert cls == "DynamicCuboid" and kw["size"] == 1.0 and kw["scale"].tolist() == [0.05, 0.05, 0.05]
    assert kw["mass"] == pytest.approx(0.08) and kw["prim_path"] == "/World/objects/red_cube"
    assert kw["color"].tolist() == list(by_name["red_cube"].rgba[:3])
    cls, kw = object_prim_args(by_name["blue_ball"], "/b")
    assert cls == "DynamicSphere" and kw["radius"] == pytest.approx(0.03)
    cls, kw = object_prim_args(by_name["green_cylinder"], "/c")
    assert cls == "DynamicCylinder" and kw["radius"] == pytest.approx(0.025) and kw["height"] == pytest.approx(0.08)
    cls, kw = object_prim_args(by_name["table_1"], "/t")   # static furniture: Fixed*, no mass
    assert cls == "FixedCuboid" and "mass" not in kw and kw["scale"].tolist() == [0.8, 0.6, 0.5]
    # orientation goes in w-x-y-z
    from sim_bridges.scenes.spec import ObjectSpec

    turned = ObjectSpec("t", "box", (0.1, 0.1, 0.1), "red", pose=Pose([0, 0, 0], quat_from_rpy(0, 0, 0.5)))
    _, kw = object_prim_args(turned, "/t")
    assert (kw["orientation"][0] == pytest.approx(math.cos(0.25))
            and kw["orientation"][3] == pytest.approx(math.sin(0.25)))
    # a mesh object (the other kinds of objects): one clear error naming the engines that build it
    from sim_bridges.scenes.kinds import KINDS

    duck = KINDS["duck"]
    with pytest.raises(ValueError, match="primitives only.*'pybullet' or 'mujoco'"):
        object_prim_args(ObjectSpec("yellow_duck", "mesh", duck.extents, "yellow", mesh=duck.mesh, kind="duck"), "/d")


def test_relative_pose_and_body_twist():
    from sim_bridges.isaac import body_twist, relative_pose

    parent = Pose([1.0, 2.0, 0.0], quat_from_rpy(0, 0, math.pi / 2))
    child = Pose([1.0, 3.0, 0.5], quat_from_rpy(0, 0, math.pi / 2 + 0.3))
    rel = relative_pose(parent, child)
    np.testing.assert_allclose(rel.position, [1.0, 0.0, 0.5], atol=1e-12)   # 1 m ahead of a base facing +y
    np.testing.assert_allclose(rel.orientation, quat_from_rpy(0, 0, 0.3), atol=1e-12)
    lin, ang = body_twist(quat_from_rpy(0, 0, math.pi / 2), [0.0, 0.4, 0.0], [0.0, 0.0, 0.2])
    np.testing.assert_allclose(lin, [0.4, 0.0, 0.0], atol=1e-12)   # driving forward, seen from base_link
    np.testing.assert_allclose(ang, [0.0, 0.0, 0.2], atol=1e-12)


def test_backend_and_launcher_import_without_isaac_sim():
    """Lazy imports only: the modules load with numpy alone, in a fresh interpreter."""
    import subprocess
    import sys

    code = ("import sys, sim_bridges.isaac.backend, sim_bridges.isaac.launcher\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('isaacsim', 'omni', 'pxr', 'carb')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.skipif(importlib.util.find_spec("isaacsim") is not None, reason="Isaac Sim is installed here")
def test_without_isaac_sim_the_backend_and_launcher_say_so_in_one_line(capsys):
    import sim_bridges
    from sim_bridges.isaac.backend import IsaacSimBackend
    from sim_bridges.isaac.launcher import bridge_argv, main, register_isaac_backend

    with pytest.raises(RuntimeError) as err:
        IsaacSimBackend()
    assert "\n" not in str(err.value) and "isaacsim" in str(err.value)
    assert main(["--scene", "home"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sim_bridges.isaac.launcher: error:") and "Isaac Sim 5.1" in lines[0]
    assert bridge_argv("home", 5, ["-p", "mode:=fast"]) == [
        "sim_bridge", "--ros-args", "-p", "backend:=isaac", "-p", "scene:=home", "-p", "seed:=5", "-p", "mode:=fast"]
    register_isaac_backend()   # what the launcher does once the app runs: the bridge's backend choice includes it
    try:
        assert "isaac" in sim_bridges.backend_names()
        with pytest.raises(RuntimeError, match="not installed"):
            sim_bridges.make_backend("isaac")
    finally:
        del sim_bridges.BACKENDS["isaac"]
