"""Mesh objects (``shape='mesh'``): the OBJ's bounding box is centred on the object's origin in every
backend, they rest on the floor at half their height, and the cameras see them where the ground
truth says. Uses meshes that ship with pybullet_data (a duck and a mug)."""

from __future__ import annotations

import math
import os

import pybullet_data
import pytest

from sim_bridges.contract import Pose
from sim_bridges.geometry import look_at_optical, project_point
from sim_bridges.robots.diff_drive import diff_drive_base
from sim_bridges.robots.spec import CameraSpec
from sim_bridges.scenes import SCENES, ObjectSpec, SceneSpec
from sim_bridges.scenes.meshes import MeshSpec, mesh_placement

DATA = pybullet_data.getDataPath()
DUCK = MeshSpec(os.path.join(DATA, "duck.obj"), scale=0.06, rpy=(math.pi / 2, 0.0, 0.0),
                collision_path=os.path.join(DATA, "duck_vhacd.obj"))
MUG = MeshSpec(os.path.join(DATA, "objects", "mug.obj"), scale=0.8,
               collision_path=os.path.join(DATA, "objects", "mug_col.obj"))


def test_placement_centres_the_turned_scaled_bounding_box(tmp_path):
    path = tmp_path / "box.obj"
    path.write_text("o b\nv 1 2 3\nv 3 2 3\nv 1 6 3\nv 1 2 4\nf 1 2 3\n")
    place = mesh_placement(MeshSpec(str(path), scale=0.5))
    assert place.extents == pytest.approx((1.0, 2.0, 0.5))
    assert place.offset == pytest.approx((-1.0, -2.0, -1.75))
    turned = mesh_placement(MeshSpec(str(path), scale=0.5, rpy=(0.0, 0.0, math.pi / 2)))  # x <- -y, y <- x
    assert turned.extents == pytest.approx((2.0, 1.0, 0.5))
    assert turned.offset == pytest.approx((2.0, -1.0, -1.75))
    with pytest.raises(ValueError, match="a mesh is given exactly"):
        ObjectSpec("m", "mesh", (0.1, 0.1, 0.1), "red")
    with pytest.raises(ValueError, match="needs its kind"):
        ObjectSpec("m", "mesh", (0.1, 0.1, 0.1), "red", mesh=MeshSpec(str(path)))
    assert ObjectSpec("c", "box", (0.1, 0.1, 0.1), "red").kind == "cube"


def _mesh_scene() -> SceneSpec:
    objects = []
    for name, kind, mesh, xy in (("yellow_duck", "duck", DUCK, (0.0, 0.0)), ("red_mug", "mug", MUG, (0.3, 0.0))):
        size = mesh_placement(mesh).extents
        objects.append(ObjectSpec(name, "mesh", size, name.split("_")[0], mass=0.1, kind=kind, mesh=mesh,
                                  pose=Pose([xy[0], xy[1], size[2] / 2 + 0.002])))
    camera = CameraSpec("top", look_at_optical([0.15, -0.6, 0.8], [0.15, 0.0, 0.0]), near=0.05, far=3.0)
    robot = diff_drive_base(base_pose=Pose([-1.5, 0.0, 0.08]))   # the MuJoCo backend builds scenes with one robot
    return SceneSpec("mesh_probe", robots=(robot,), objects=tuple(objects), cameras=(camera,))


@pytest.fixture(scope="module", autouse=True)
def mesh_probe_scene():
    SCENES["mesh_probe"] = _mesh_scene
    yield
    del SCENES["mesh_probe"]


@pytest.mark.parametrize("backend", ["pybullet", "mujoco"])
def test_mesh_objects_rest_at_half_height_and_are_seen_where_the_truth_says(backend, monkeypatch):
    from sim_bridges import make_backend

    if backend == "mujoco":   # a test scene: let the MuJoCo backend build it too
        import sim_bridges.mujoco_backend.backend as mj

        monkeypatch.setattr(mj, "MUJOCO_SCENES", mj.MUJOCO_SCENES + ("mesh_probe",))

    sim = make_backend(backend, physics_rate_hz=240.0, control_rate_hz=60.0)
    try:
        sim.load_scene("mesh_probe")
        sim.reset(0)
        for _ in range(60):   # 1 s: settle
            sim.step()
        truth = sim.ground_truth()
        spec = {o.name: o for o in _mesh_scene().objects}
        frame = sim.camera_frame("top")
        for name, obj in spec.items():
            z = truth[name].pose.position[2]
            assert z == pytest.approx(obj.size[2] / 2, abs=0.006), (backend, name, z, obj.size)
            # the camera sees the object (its colour) where the truth projects, in both engines
            u, v, _ = project_point(truth[name].pose.position, frame.intrinsics, frame.pose)
            r, g, b = (float(c) for c in frame.rgb[int(round(v)), int(round(u)), :3])
            if obj.color_name == "red":
                assert r > 2 * g and r > 2 * b, (backend, name, (r, g, b))
            else:  # yellow
                assert r > 2 * b and g > 2 * b, (backend, name, (r, g, b))
    finally:
        sim.close()
