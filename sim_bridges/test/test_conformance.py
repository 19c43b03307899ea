"""Backend-agnostic conformance tests for :class:`sim_bridges.contract.SimBackend`.

Every test takes its backend from the parametrised ``make_backend`` /
``scene_cache`` fixtures (conftest.py), so a new backend only has to be added
to ``BACKEND_FACTORIES`` to be held to the same contract.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim_bridges.contract import Capability, NotSupported
from sim_bridges.geometry import backproject_pixel, project_point, quat_to_matrix, yaw_from_quat
from sim_bridges.scenes import scene_names

ALL_SCENES = ("cartpole", "ball_plate", "panda_table", "home")


def _command(sim, rng: np.random.Generator) -> None:
    """Apply a scene-appropriate random command (drawn from ``rng``)."""
    caps = sim.capabilities
    if Capability.CART_FORCE in caps:
        sim.set_cart_force(float(rng.uniform(-10, 10)))
    if Capability.PLATE_ANGLES in caps:
        sim.set_plate_angles(*rng.uniform(-0.1, 0.1, size=2))
    if Capability.END_EFFECTOR_DELTA in caps:
        sim.set_end_effector_delta(*rng.uniform(-0.01, 0.01, size=3))
    if Capability.BASE_VELOCITY in caps:
        sim.set_base_velocity(0.3, float(rng.uniform(-0.5, 0.5)))


def _state_vector(sim) -> np.ndarray:
    js = sim.joint_state()
    parts = [js.position, js.velocity]
    for obj in sim.ground_truth().values():
        parts += [obj.pose.position, obj.pose.orientation, obj.velocity.linear, obj.velocity.angular]
    if Capability.BASE_VELOCITY in sim.capabilities:
        odom = sim.base_odometry()
        parts += [odom.pose.position, odom.pose.orientation, odom.twist.linear, odom.twist.angular]
    return np.concatenate(parts)


def _trajectory(sim, seed: int, n_steps: int = 30) -> np.ndarray:
    sim.reset(seed)
    rng = np.random.default_rng(1234)  # command sequence independent of the scene seed
    states = [_state_vector(sim)]
    for _ in range(n_steps):
        _command(sim, rng)
        sim.step(1)
        states.append(_state_vector(sim))
    return np.array(states)


# --------------------------------------------------------------- determinism
@pytest.mark.parametrize("scene", ALL_SCENES)
def test_same_seed_same_trajectory(make_backend, scene):
    """Same seed + same commands => identical trajectory, across instances and after history."""
    a, b = make_backend(), make_backend()
    a.load_scene(scene)
    b.load_scene(scene)
    ref = _trajectory(a, seed=7)
    _trajectory(b, seed=3)  # give b a different history first
    again_b = _trajectory(b, seed=7)
    again_a = _trajectory(a, seed=7)
    np.testing.assert_allclose(again_b, ref, rtol=0, atol=1e-9)
    np.testing.assert_allclose(again_a, ref, rtol=0, atol=1e-9)
    # and the seed matters
    assert np.abs(_trajectory(a, seed=8) - ref).max() > 1e-6


@pytest.mark.parametrize("scene", ALL_SCENES)
def test_reset_restores_state(scene_cache, scene):
    sim = scene_cache(scene)
    sim.reset(11)
    initial = _state_vector(sim)
    assert sim.sim_time == 0.0
    rng = np.random.default_rng(0)
    for _ in range(20):
        _command(sim, rng)
        sim.step(1)
    assert np.abs(_state_vector(sim) - initial).max() > 1e-6
    sim.reset(11)
    assert sim.sim_time == 0.0
    np.testing.assert_array_equal(_state_vector(sim), initial)


# ------------------------------------------------------------------- timing
def test_control_period_validation(make_backend):
    with pytest.raises(ValueError, match="divide"):
        make_backend(physics_rate_hz=240.0, control_rate_hz=50.0)
    sim = make_backend(physics_rate_hz=240.0, control_rate_hz=60.0)
    assert sim.physics_rate_hz == 240.0
    assert sim.control_period == pytest.approx(1.0 / 60.0)
    with pytest.raises(ValueError, match="divide"):
        sim.set_control_rate(70.0)
    with pytest.raises(ValueError):
        sim.set_control_rate(480.0)  # faster than physics
    with pytest.raises(ValueError):
        sim.set_control_rate(0.0)
    assert sim.control_period == pytest.approx(1.0 / 60.0)  # unchanged by the failures
    sim.load_scene("cartpole")
    sim.step(3)
    assert sim.sim_time == pytest.approx(3.0 / 60.0, abs=1e-12)
    sim.set_control_rate(80.0)
    sim.step(2)
    assert sim.sim_time == pytest.approx(3.0 / 60.0 + 2.0 / 80.0, abs=1e-12)


# ------------------------------------------------------------------- scenes
def test_unknown_scene_lists_valid_names(make_backend):
    sim = make_backend()
    with pytest.raises(ValueError) as err:
        sim.load_scene("nope")
    for name in scene_names():
        assert name in str(err.value)
    assert set(ALL_SCENES) <= set(scene_names())


def test_capability_errors(scene_cache):
    cart = scene_cache("cartpole")
    assert Capability.CART_FORCE in cart.capabilities
    for call in (
        lambda: cart.set_base_velocity(0.1, 0.0),
        cart.base_odometry,
        lambda: cart.set_gripper(True),
        lambda: cart.set_end_effector_delta(0.0, 0.0, 0.01),
        lambda: cart.set_plate_angles(0.0, 0.0),
        cart.static_occupancy,
        lambda: cart.set_joint_targets(["slider_to_cart"], [0.0]),
    ):
        with pytest.raises(NotSupported) as err:
            call()
        assert "cartpole" in str(err.value) and "cart_force" in str(err.value)
        assert isinstance(err.value, NotImplementedError)
    plate = scene_cache("ball_plate")
    with pytest.raises(NotSupported, match="cart_force"):
        plate.set_cart_force(1.0)
    panda = scene_cache("panda_table")
    assert {Capability.END_EFFECTOR_DELTA, Capability.GRIPPER} <= panda.capabilities
    with pytest.raises(NotSupported, match="base_velocity"):
        panda.set_base_velocity(0.1, 0.0)


# ------------------------------------------------------------------- joints
def test_joint_state_and_limits_consistent(scene_cache):
    for scene in ALL_SCENES:
        sim = scene_cache(scene)
        sim.step(3)   # gravity moves the passive joints: the rows below are not all zeros
        js = sim.joint_state()
        limits = sim.joint_limits()
        assert js.names == sim.joint_names == tuple(limits)
        for arr in (js.position, js.velocity, js.effort):
            assert arr.shape == (len(js.names),) and arr.dtype == np.float64
        # the batch bridge's direct read agrees with the snapshot, value for value
        rows = np.full((3, len(js.names)), np.nan)
        sim.read_joint_state_into(rows[0], rows[1], rows[2])
        np.testing.assert_array_equal(rows, np.stack([js.position, js.velocity, js.effort]))
        for lim in limits.values():
            assert lim.lower <= lim.upper and lim.max_velocity >= 0


def test_joint_target_validation_and_limits(scene_cache):
    sim = scene_cache("panda_table")
    sim.reset(0)
    limits = sim.joint_limits()
    j4 = limits["panda_joint4"]
    with pytest.raises(ValueError, match="outside limits"):
        sim.set_joint_targets(["panda_joint4"], [j4.upper + 0.1])
    with pytest.raises(ValueError, match="finite"):
        sim.set_joint_targets(["panda_joint1"], [float("nan")])
    with pytest.raises(ValueError, match="unknown joint"):
        sim.set_joint_targets(["elbow"], [0.0])
    with pytest.raises(ValueError):
        sim.set_joint_targets(["panda_joint1", "panda_joint2"], [0.0])
    # Commands at the limits are accepted and the joints stay within them.
    names = ["panda_joint4", "panda_joint6", "panda_finger_joint1"]
    targets = [j4.upper, limits["panda_joint6"].upper, limits["panda_finger_joint1"].upper]
    sim.set_joint_targets(names, targets)
    # Huge end-effector deltas are solved by IK and clamped into the limits.
    for _ in range(30):
        sim.set_end_effector_delta(0.5, -0.5, 0.5)
        sim.step(1)
    js = sim.joint_state()
    for name, pos in zip(js.names, js.position):
        lim = limits[name]
        assert lim.lower - 1e-3 <= pos <= lim.upper + 1e-3, (name, pos, lim)


def test_passive_joints_and_plate_limits(scene_cache):
    plate = scene_cache("ball_plate")
    plate.reset(0)
    with pytest.raises(ValueError, match="outside limits"):
        plate.set_plate_angles(0.3, 0.0)
    with pytest.raises(ValueError, match="outside limits"):
        plate.set_joint_targets(["plate_roll"], [-0.26])
    plate.set_plate_angles(0.25, -0.25)
    plate.step(60)
    pitch, roll = plate.joint_state().position
    assert pitch == pytest.approx(0.25, abs=5e-3) and roll == pytest.approx(-0.25, abs=5e-3)
    cart = scene_cache("cartpole")
    with pytest.raises(ValueError):
        cart.set_cart_force(float("inf"))
    with pytest.raises(ValueError):
        cart.set_cart_force(1e6)


# --------------------------------------------------------------- diff drive
def _drive(sim, linear, angular, settle_s=1.0, measure_s=2.0):
    sim.reset(0)
    sim.set_base_velocity(linear, angular)
    sim.step(int(round(settle_s / sim.control_period)))  # let the wheels accelerate
    start = sim.base_odometry()
    sim.step(int(round(measure_s / sim.control_period)))
    return start, sim.base_odometry()


def test_diff_drive_straight_line(scene_cache):
    """0.3 m/s for 2 s => 0.6 m along x, within 2 %, < 1 cm lateral drift."""
    sim = scene_cache("home")
    start, end = _drive(sim, 0.3, 0.0)
    d = end.pose.position - start.pose.position
    heading = yaw_from_quat(start.pose.orientation)
    along = d[0] * math.cos(heading) + d[1] * math.sin(heading)
    across = -d[0] * math.sin(heading) + d[1] * math.cos(heading)
    assert along == pytest.approx(0.6, rel=0.02)
    assert abs(across) < 0.01
    assert end.twist.linear[0] == pytest.approx(0.3, rel=0.02)
    assert end.frame_id == "odom" and end.child_frame_id == "base_link"


def test_diff_drive_turn_in_place(scene_cache):
    """0.5 rad/s for 2 s => 1.0 rad, within 2 %, base drifts < 1 cm."""
    sim = scene_cache("home")
    start, end = _drive(sim, 0.0, 0.5)
    dyaw = yaw_from_quat(end.pose.orientation) - yaw_from_quat(start.pose.orientation)
    dyaw = (dyaw + math.pi) % (2 * math.pi) - math.pi
    assert dyaw == pytest.approx(1.0, rel=0.02)
    assert np.linalg.norm(end.pose.position[:2] - start.pose.position[:2]) < 0.01
    assert end.twist.angular[2] == pytest.approx(0.5, rel=0.02)


def test_base_velocity_validation(scene_cache):
    sim = scene_cache("home")
    with pytest.raises(ValueError):
        sim.set_base_velocity(float("nan"), 0.0)


# ------------------------------------------------------------------- camera
def test_depth_backprojection_hits_cube_faces(scene_cache):
    """Centre pixel of each cube's top face, back-projected, lands within 1 cm of it."""
    sim = scene_cache("panda_table")
    sim.reset(4)
    sim.step(10)  # let the cubes settle on the table
    (cam,) = sim.camera_names
    frame = sim.camera_frame(cam)
    k = frame.intrinsics
    for name, obj in sim.ground_truth().items():
        if not name.endswith("_cube"):
            continue
        rot = quat_to_matrix(obj.pose.orientation)
        face_centre = obj.pose.position + rot @ np.array([0.0, 0.0, obj.size[2] / 2])
        u, v, _ = project_point(face_centre, k, frame.pose)
        ui, vi = int(round(u)), int(round(v))
        assert 0 <= ui < k.width and 0 <= vi < k.height, name
        depth = float(frame.depth[vi, ui])
        assert np.isfinite(depth), name
        point = backproject_pixel(ui, vi, depth, k, frame.pose)
        assert np.linalg.norm(point - face_centre) < 0.01, (name, point, face_centre)
        # the pixel shows the cube's colour
        expected = {"red": 0, "green": 1, "yellow": 0}[obj.color_name]
        assert frame.rgb[vi, ui, expected] > 150, (name, frame.rgb[vi, ui])


def test_mobile_camera_sees_floor_at_zero(scene_cache):
    """Floor pixels of the mast camera (moving frame) back-project onto z = 0."""
    sim = scene_cache("home")
    _drive(sim, 0.2, 0.3, settle_s=0.5, measure_s=0.5)  # move and turn first
    frame = sim.camera_frame("head_camera")
    k = frame.intrinsics
    heights = []
    for u in (10, 40, k.width - 40, k.width - 10):
        v = k.height - 5
        point = backproject_pixel(u, v, float(frame.depth[v, u]), k, frame.pose)
        heights.append(point[2])
    assert np.all(np.abs(heights) < 0.01), heights


def test_camera_frame_contract(scene_cache):
    for scene in ALL_SCENES:
        sim = scene_cache(scene)
        for name in sim.camera_names:
            f = sim.camera_frame(name)
            h, w = f.intrinsics.height, f.intrinsics.width
            assert f.rgb.shape == (h, w, 3) and f.rgb.dtype == np.uint8
            assert f.depth.shape == (h, w) and f.depth.dtype == np.float32
            finite = f.depth[np.isfinite(f.depth)]
            assert finite.size > 0 and finite.min() > 0
            assert np.linalg.norm(f.pose.orientation) == pytest.approx(1.0)
            assert f.stamp == sim.sim_time
        with pytest.raises(ValueError, match="unknown camera"):
            sim.camera_frame("no_such_camera")


def test_link_transforms_chain_to_the_end_effector(make_backend):
    """Composing the published parent->child transforms from the root reproduces a link's
    world pose: what tf2 would compute from /tf. Checked in home after the arm has moved."""
    import numpy as np

    from sim_bridges.geometry import quat_to_matrix

    sim = make_backend()
    sim.load_scene("home")
    sim.set_base_velocity(0.3, 0.4)
    sim.set_end_effector_delta(0.02, 0.0, -0.02)
    sim.step(30)
    transforms = sim.link_transforms()
    edges = {t.child: t for t in transforms}
    assert len(edges) == len(transforms), "a link has two parents"
    # The mobile base floats: its root has no parent here (odometry places it).
    assert "base_link" not in edges and len(edges) >= 10

    def world_of(link: str) -> np.ndarray:
        if link == "base_link":
            pose = sim.base_odometry().pose
        else:
            edge = edges[link]
            parent = world_of(edge.parent)
            local = np.eye(4)
            local[:3, :3] = quat_to_matrix(edge.pose.orientation)
            local[:3, 3] = edge.pose.position
            return parent @ local
        out = np.eye(4)
        out[:3, :3] = quat_to_matrix(pose.orientation)
        out[:3, 3] = pose.position
        return out

    # The head camera's optical frame, reached through the tree, matches the camera pose.
    frame = sim.camera_frame("head_camera")
    optical = world_of("camera_optical_frame")
    assert np.allclose(optical[:3, 3], frame.pose.position, atol=1e-6)
    assert np.allclose(optical[:3, :3], quat_to_matrix(frame.pose.orientation), atol=1e-6)
    # Fingers hang off the hand, the hand off the arm: the chain reaches base_link.
    link, depth = "panda_leftfinger", 0
    while link != "base_link":
        link, depth = edges[link].parent, depth + 1
    assert depth >= 8


def test_fixed_base_robots_hang_from_world(make_backend):
    sim = make_backend()
    sim.load_scene("panda_table")
    edges = {t.child: t for t in sim.link_transforms()}
    assert edges["panda_link0"].parent == "world"
    children = {t.child for t in edges.values()}
    roots = {t.parent for t in edges.values()} - children
    assert roots == {"world"}


def test_grasp_and_lift_a_cube(scene_cache):
    """The arm's capabilities together, on each engine: end-effector steps bring the open gripper down
    onto the red cube, it closes, and the cube comes up with the hand (10 cm); the fingers then touch the
    cube (gripper_contacts names it where the engine reports contacts)."""
    sim = scene_cache("panda_table")
    sim.reset(2)
    sim.set_gripper(True)
    edges = {}

    def grasp_point() -> np.ndarray:
        edges.update({t.child: t for t in sim.link_transforms()})
        out, link = np.eye(4), "panda_grasptarget"
        while link in edges:
            m = np.eye(4)
            m[:3, :3] = quat_to_matrix(edges[link].pose.orientation)
            m[:3, 3] = edges[link].pose.position
            out, link = m @ out, edges[link].parent
        return out[:3, 3]

    def go_to(target, max_steps: int = 300) -> None:   # 5 s at 60 Hz; the hand moves ~15-20 cm/s here
        for _ in range(max_steps):
            error = np.asarray(target) - grasp_point()
            if np.linalg.norm(error) < 0.003:
                break
            sim.set_end_effector_delta(*np.clip(error, -0.01, 0.01))
            sim.step(1)

    cube0 = sim.ground_truth()["red_cube"].pose.position.copy()
    go_to(cube0 + [0.0, 0.0, 0.08])
    go_to(cube0)
    assert np.linalg.norm(grasp_point() - cube0) < 0.01
    sim.set_gripper(False)
    sim.step(30)
    go_to(cube0 + [0.0, 0.0, 0.15], 90)
    cube = sim.ground_truth()["red_cube"].pose.position
    assert cube[2] - cube0[2] > 0.10, (cube0, cube)
    contacts = sim.gripper_contacts()
    assert any("red_cube" in line for line in contacts), contacts


def test_end_effector_step_period_spreads_a_step_over_the_commands_interval(make_backend):
    """A 60 Hz backend driven at 20 Hz: with the step period set to 50 ms, one end-effector step
    moves the arm over three control periods instead of one (the arm is a smaller part of the way
    after the first period, and gets there all the same). Bad periods are refused."""
    import numpy as np

    def moved_fraction(period):
        sim = make_backend(control_rate_hz=60.0)
        sim.load_scene("panda_table")
        sim.step(30)
        if period is not None:
            sim.set_end_effector_step_period(period)
        arm = [i for i, n in enumerate(sim.joint_names) if n.startswith("panda_joint")]
        q0 = sim.joint_state().position[arm].copy()
        sim.set_end_effector_delta(0.0, 0.0, 0.015)
        sim.step(1)
        q1 = sim.joint_state().position[arm].copy()
        sim.step(30)
        q_end = sim.joint_state().position[arm].copy()
        total = np.linalg.norm(q_end - q0)
        assert total > 1e-3, "the arm did not move"
        return float(np.linalg.norm(q1 - q0) / total), sim

    one_period, _ = moved_fraction(None)
    spread, sim = moved_fraction(0.05)
    assert spread < 0.6 * one_period, (spread, one_period)
    for bad in (0.0, -0.05, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            sim.set_end_effector_step_period(bad)
    sim.set_end_effector_step_period(None)   # back to one control period


# ------------------------------------------------------- spawning and deleting
def test_spawn_and_delete_the_scenes_object_kinds(scene_cache):
    """spawn_object adds a copy of the scene's object kind at the given pose (the robot's state is
    untouched, the new object falls and comes to rest on the table), delete_object removes one, bad
    input is one ValueError line, and reset restores the scene as loaded."""
    from sim_bridges.contract import Pose

    sim = scene_cache("panda_table")
    sim.reset(0)
    loaded = set(sim.ground_truth())
    assert "cube" in sim.spawnable_kinds()
    sim.step(5)
    before = sim.joint_state()
    cube0 = sim.ground_truth()["red_cube"]
    place = Pose(cube0.pose.position + [0.0, 0.12, 0.05])
    sim.spawn_object("spare_cube", "cube", place)
    truth = sim.ground_truth()
    assert set(truth) == loaded | {"spare_cube"}
    np.testing.assert_allclose(truth["spare_cube"].pose.position, place.position, atol=1e-9)
    assert truth["spare_cube"].kind == "cube" and truth["spare_cube"].size == cube0.size
    after = sim.joint_state()
    np.testing.assert_allclose(after.position, before.position, atol=1e-12)
    np.testing.assert_allclose(after.velocity, before.velocity, atol=1e-12)
    sim.step(60)
    rest = sim.ground_truth()["spare_cube"]
    assert abs(rest.pose.position[2] - cube0.pose.position[2]) < 0.01, (rest.pose.position, cube0.pose.position)
    assert np.linalg.norm(rest.velocity.linear) < 0.05
    sim.set_object_pose("spare_cube", place)
    np.testing.assert_allclose(sim.ground_truth()["spare_cube"].pose.position, place.position, atol=1e-9)

    for bad in (lambda: sim.spawn_object("spare_cube", "cube", place),          # taken
                lambda: sim.spawn_object("x y", "cube", place),                 # invalid name
                lambda: sim.spawn_object("spaceship", "spaceship", place),      # unknown kind
                lambda: sim.spawn_object("nan_cube", "cube", Pose([math.nan, 0, 1])),
                lambda: sim.delete_object("no_such_object")):
        with pytest.raises(ValueError) as err:
            bad()
        assert "\n" not in str(err.value)

    sim.delete_object("red_cube")
    assert "red_cube" not in sim.ground_truth() and "spare_cube" in sim.ground_truth()
    sim.step(2)
    sim.reset(0)
    assert set(sim.ground_truth()) == loaded


# ------------------------------------------- views and truth for trainers and evaluators
def test_render_view_of_a_scene_camera_matches_its_frame(scene_cache):
    """render_view with a scene camera's spec and pose renders what camera_frame does; an off-axis
    window renders exactly that crop of it; camera_spec/camera_pose refuse an unknown camera."""
    sim = scene_cache("panda_table")
    sim.reset(0)
    name = sim.camera_names[0]
    spec = sim.camera_spec(name)
    frame = sim.camera_frame(name)
    view = sim.render_view(spec)
    np.testing.assert_allclose(sim.camera_pose(name).position, frame.pose.position, atol=1e-9)
    assert view.rgb.shape == frame.rgb.shape and view.stamp == sim.sim_time
    assert np.mean(np.abs(view.rgb.astype(int) - frame.rgb)) < 0.5       # rasterisation at edges only
    both = np.isfinite(view.depth) & np.isfinite(frame.depth)
    assert both.mean() > 0.9 and np.abs(view.depth[both] - frame.depth[both]).max() < 1e-3
    # the window of the image's central quarter, rendered alone at the crop's size
    t = math.tan(0.5 * spec.vfov_rad)
    a = t * spec.width / spec.height
    import dataclasses

    crop = dataclasses.replace(spec, width=spec.width // 2, height=spec.height // 2)
    window = sim.render_view(crop, frame.pose, window=(-a / 2, a / 2, -t / 2, t / 2))
    h0, w0 = spec.height // 4, spec.width // 4
    inner = frame.depth[h0:h0 + crop.height, w0:w0 + crop.width]
    both = np.isfinite(window.depth) & np.isfinite(inner)
    assert both.mean() > 0.9 and np.median(np.abs(window.depth[both] - inner[both])) < 1e-3
    # a world-fixed view of one's own: the cube seen from above, centred
    from sim_bridges.contract import Pose

    cube = sim.ground_truth()["red_cube"].pose.position
    above = dataclasses.replace(spec, name="above", width=64, height=48, link=None, robot=None,
                                pose=Pose(cube + [0.0, 0.0, 0.5], [1.0, 0.0, 0.0, 0.0]))
    top = sim.render_view(above)
    assert top.depth[24, 32] == pytest.approx(0.5 - sim.ground_truth()["red_cube"].size[2] / 2, abs=0.01)
    for bad in (lambda: sim.camera_spec("no_such_camera"), lambda: sim.camera_pose("no_such_camera"),
                lambda: sim.render_view(spec, window=(1.0, -1.0, -1.0, 1.0))):
        with pytest.raises(ValueError):
            bad()


def test_scene_spec_describes_the_loaded_scene(make_backend):
    """scene_spec: None before a scene is loaded, then the loaded scene's description (what an
    evaluator reads a robot's kinematics from instead of the backend's internals), replaced by the
    next load_scene."""
    sim = make_backend()
    assert sim.scene_spec is None
    sim.load_scene("home")
    spec = sim.scene_spec
    assert spec.name == sim.scene_name == "home"
    assert {o.name for o in spec.objects} == set(sim.ground_truth())
    cameras = {c.name: c for c in spec.cameras + tuple(c for r in spec.robots for c in r.cameras)}
    assert set(cameras) == set(sim.camera_names) != set()
    for name, described in cameras.items():
        built = sim.camera_spec(name)
        assert (built.width, built.height, built.vfov_rad) == (described.width, described.height, described.vfov_rad)
    drive = next(r for r in spec.robots if r.diff_drive is not None).diff_drive
    assert {drive.left_wheel_joint, drive.right_wheel_joint} <= set(sim.joint_names)
    sim.load_scene("cartpole")
    assert sim.scene_spec.name == sim.scene_name == "cartpole"
    assert all(r.diff_drive is None for r in sim.scene_spec.robots)


def test_dynamics_scale_changes_what_the_physics_does_and_restores_it(make_backend):
    """A heavier cube pushes the cube it hits further, a slipperier one slides another way, and the
    scale is absolute ({} restores the nominal trajectory): the scale reaches the physics on every
    engine (MuJoCo combines two geoms' friction by their maximum, so the table still dominates)."""
    from sim_bridges.contract import Pose

    sim = make_backend()
    sim.load_scene("panda_table")
    bodies = sim.dynamics_bodies()
    assert {"red_cube", "green_cube"} <= set(bodies) and len(set(bodies)) == len(bodies)

    def hit(mass, friction):
        """How far the green cube goes when the red one is sent into it at 1 m/s."""
        sim.reset(0)
        sim.set_dynamics_scale(mass, friction)
        red = sim.ground_truth()["red_cube"].pose.position
        sim.set_object_pose("green_cube", Pose(red + [0.0, 0.08, 0.0]))
        start = sim.ground_truth()["green_cube"].pose.position.copy()
        sim.set_object_velocity("red_cube", [0.0, 1.0, 0.0])
        sim.step(20)
        return float(np.linalg.norm(sim.ground_truth()["green_cube"].pose.position - start))

    nominal = hit({}, {})
    assert nominal > 0.002                       # set_object_velocity sent it
    assert hit({"red_cube": 3.0}, {}) > 1.8 * nominal
    assert hit({"red_cube": 0.5}, {}) < 0.8 * nominal
    assert abs(hit({}, {"red_cube": 0.2, "green_cube": 0.2}) - nominal) > 1e-3
    assert hit({}, {}) == pytest.approx(nominal, abs=1e-9)                 # absolute: restored
    with pytest.raises(KeyError):
        sim.set_dynamics_scale({"no_such_body": 1.0}, {})
    with pytest.raises(ValueError):
        sim.set_dynamics_scale({"red_cube": 0.0}, {})
    with pytest.raises(ValueError):
        sim.set_object_velocity("no_such_object", [0.0, 0.0, 0.0])


def test_body_and_robot_base_poses(scene_cache):
    """body_pose gives an object's pose as ground_truth does and a link's URDF frame as the
    published tree places it; robot_base_pose is the mobile base's odometry pose in the sim."""
    sim = scene_cache("panda_table")
    sim.reset(0)
    truth = sim.ground_truth()["red_cube"].pose
    np.testing.assert_allclose(sim.body_pose("red_cube").position, truth.position, atol=1e-9)
    ee = sim.body_pose("panda_grasptarget").position
    sim.set_end_effector_delta(0.0, 0.0, 0.02)
    sim.step(10)
    assert sim.body_pose("panda_grasptarget").position[2] - ee[2] == pytest.approx(0.02, abs=0.005)
    np.testing.assert_allclose(sim.body_pose("panda").position, sim.robot_base_pose().position, atol=1e-9)
    for bad in (lambda: sim.body_pose("no_such_link"), lambda: sim.robot_base_pose("no_such_robot")):
        with pytest.raises(ValueError):
            bad()
    home = scene_cache("home")
    home.reset(0)
    np.testing.assert_allclose(home.robot_base_pose().position, home.base_odometry().pose.position, atol=1e-9)


def test_robot_contacts_name_what_the_base_touches(scene_cache):
    """Standing on the floor the base touches nothing; a cube put against it is reported by name."""
    from sim_bridges.contract import Pose

    sim = scene_cache("home")
    sim.reset(0)
    sim.step(5)
    assert sim.robot_contacts() == []
    base = sim.base_odometry().pose.position
    name = next(n for n, o in sim.ground_truth().items() if o.kind == "cube")
    size = sim.ground_truth()[name].size
    # just in front of the base's front edge, resting on the floor, pressed into it
    sim.set_object_pose(name, Pose([base[0] + 0.22, base[1], size[2] / 2 + 0.001]))
    sim.set_object_velocity(name, [-0.5, 0.0, 0.0])
    touched = set()
    for _ in range(20):
        sim.step(1)
        touched |= set(sim.robot_contacts())
    assert name in touched, (touched, sim.ground_truth()[name].pose.position, base)
    sim.reset(0)
    with pytest.raises(NotSupported):
        scene_cache("panda_table").robot_contacts()


def test_visual_colors_round_trip(scene_cache):
    sim = scene_cache("ball_plate")
    sim.reset(0)
    colors = sim.visual_colors()
    key = next(k for k in colors if k[0] == "ball")
    sim.set_visual_colors({key: (0.1, 0.2, 0.3, 1.0)})
    assert sim.visual_colors()[key] == pytest.approx((0.1, 0.2, 0.3, 1.0), abs=1e-6)
    sim.set_visual_colors({key: colors[key]})
    assert sim.visual_colors()[key] == pytest.approx(colors[key], abs=1e-6)
    with pytest.raises(KeyError):
        sim.set_visual_colors({("no_such_body", 0): (1, 1, 1, 1)})


def test_lighting_is_pybullet_only(scene_cache):
    """render_view's lighting: PyBullet's TinyRenderer light; MuJoCo says why it cannot."""
    from sim_bridges.contract import Lighting

    sim = scene_cache("ball_plate")
    sim.reset(0)
    spec = sim.camera_spec(sim.camera_names[0])
    light = Lighting(direction=(0.0, 0.0, 10.0), color=(1.0, 0.2, 0.2), ambient=0.3, diffuse=0.6, specular=0.0)
    if type(sim).__name__ == "MuJoCoBackend":
        with pytest.raises(NotImplementedError, match="lights are elements of the compiled model"):
            sim.render_view(spec, lighting=light)
        return
    plain = sim.render_view(spec).rgb.astype(float)     # first: PyBullet keeps a light once given
    red = sim.render_view(spec, lighting=light).rgb.astype(float)
    assert red[..., 0].mean() - red[..., 1].mean() > plain[..., 0].mean() - plain[..., 1].mean() + 5


def test_an_engine_without_an_optional_view_says_why():
    """The contract's optional methods raise NotImplementedError naming the engine, the method and
    the reason (Isaac Sim's backend sets one; it cannot run here, so a stand-in checks the text)."""
    from sim_bridges.backend_base import BackendBase

    class Stub(BackendBase):
        unimplemented_reason = "a stand-in engine"
        load_scene = reset = step = close = joint_state = joint_limits = set_joint_targets = None
        camera_frame = ground_truth = link_transforms = None
        camera_names = ()

    Stub.__abstractmethods__ = frozenset()
    stub = Stub()
    for call in (lambda: stub.render_view(None), stub.dynamics_bodies, lambda: stub.body_pose("x"),
                 stub.robot_base_pose, stub.robot_contacts, stub.visual_colors,
                 lambda: stub.set_dynamics_scale({}, {}), lambda: stub.set_object_velocity("x", (0, 0, 0))):
        with pytest.raises(NotImplementedError, match=r"Stub\.\w+: a stand-in engine"):
            call()
