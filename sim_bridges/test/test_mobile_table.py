"""The ``mobile_table`` scene: mobile manipulator in front of a home-size table, target cube on it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim_bridges.geometry import yaw_from_quat
from sim_bridges.scenes import make_scene, scene_names
from sim_bridges.scenes.home import TABLE_SIZE
from sim_bridges.scenes.mobile_table import CUBE_REGION, CUBE_REST_Z, CUBE_SEPARATION, DISTRACTOR, TABLE_EDGE_X, TARGET


def test_spec_geometry_and_cube_spec():
    assert "mobile_table" in scene_names()
    spec = make_scene("mobile_table")
    (robot,) = spec.robots
    assert robot.name == "mobile_manipulator" and not robot.fixed_base
    assert np.allclose(robot.base_pose.position, [0.0, 0.0, 0.08])     # base_link at the origin, axle height
    assert np.allclose(robot.base_pose.orientation, [0.0, 0.0, 0.0, 1.0])  # facing +x
    (table,) = spec.static
    assert tuple(table.size) == tuple(TABLE_SIZE)
    assert table.pose.position[0] - 0.5 * table.size[0] == pytest.approx(TABLE_EDGE_X)
    assert 0.38 <= TABLE_EDGE_X <= 0.46
    cubes = {o.name: o for o in spec.objects}
    assert set(cubes) == {TARGET, DISTRACTOR}
    for c in cubes.values():   # home's cube spec
        assert c.shape == "box" and tuple(c.size) == (0.05, 0.05, 0.05)
        assert c.mass == pytest.approx(0.08) and c.lateral_friction == pytest.approx(0.8)
    assert CUBE_REGION == (0.44, 0.76, -0.25, 0.25)


def test_sampler_places_cubes_fully_on_the_table_in_the_region():
    spec = make_scene("mobile_table")
    (table,) = spec.static
    tx, ty = table.pose.position[:2]
    half = 0.5 * 0.05 * math.sqrt(2)   # a cube's half diagonal: any yaw stays on the top
    yaws = []
    for seed in range(300):
        poses = spec.sample_object_poses(np.random.default_rng(seed))
        assert set(poses) == {TARGET, DISTRACTOR}
        for p in poses.values():
            x, y, z = p.position
            assert CUBE_REGION[0] <= x <= CUBE_REGION[1] and CUBE_REGION[2] <= y <= CUBE_REGION[3]
            assert z == pytest.approx(CUBE_REST_Z)
            assert abs(x - tx) + half <= 0.5 * table.size[0] and abs(y - ty) + half <= 0.5 * table.size[1]
        a, b = (np.asarray(poses[n].position[:2]) for n in (TARGET, DISTRACTOR))
        assert np.linalg.norm(a - b) >= CUBE_SEPARATION - 1e-9
        yaws.append(yaw_from_quat(poses[TARGET].orientation))
    assert min(yaws) < -2.8 and max(yaws) > 2.8    # any yaw


def test_reset_rest_and_clearance(scene_cache):
    sim = scene_cache("mobile_table")
    sim.reset(4)
    gt0 = sim.ground_truth()
    sim.step(40)   # 2 s: cubes stay where placed, the base stays put
    gt = sim.ground_truth()
    for name in (TARGET, DISTRACTOR):
        assert gt[name].pose.position[2] == pytest.approx(CUBE_REST_Z, abs=2e-3)
        assert np.linalg.norm(gt[name].pose.position - gt0[name].pose.position) < 2e-3
    odom = sim.base_odometry()
    assert np.allclose(odom.pose.position, [0.0, 0.0, 0.08], atol=5e-3)
    # the base body (and the arm at rest) keeps clear of the table
    (box,) = sim.static_occupancy()
    assert box.name == "table" and box.x_min == pytest.approx(TABLE_EDGE_X) and box.height == pytest.approx(0.5)
    assert _robot_table_distance(sim) > 0.1, "robot within 10 cm of the table"
    for name in sim.camera_names:
        frame = sim.camera_frame(name)
        assert frame.rgb.shape == (240, 320, 3) and frame.rgb.std() > 5


def _robot_table_distance(sim) -> float:
    """Smallest distance between the robot and the table, from the engine's own collision query."""
    if hasattr(sim, "client_id"):   # PyBullet
        import pybullet as p

        cid = sim.client_id
        ids = [p.getBodyUniqueId(i, physicsClientId=cid) for i in range(p.getNumBodies(physicsClientId=cid))]
        robot = next(b for b in ids if p.getBodyInfo(b, physicsClientId=cid)[1] == b"mobile_manipulator")
        tables = [b for b in ids if b != robot and abs(p.getAABB(b, physicsClientId=cid)[0][0] - TABLE_EDGE_X) < 0.03
                  and abs(p.getAABB(b, physicsClientId=cid)[1][2] - 0.5) < 0.03]
        assert len(tables) == 1
        points = p.getClosestPoints(robot, tables[0], 0.1, physicsClientId=cid)
        return min((c[8] for c in points), default=math.inf)
    import mujoco  # MuJoCo: every robot collision geom against the table geom

    model, data = sim.model, sim.data
    table = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "table")
    objects = {mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n) for n in sim.ground_truth()}
    robot = [g for g in range(model.ngeom) if (model.geom_contype[g] or model.geom_conaffinity[g])
             and model.geom_bodyid[g] not in objects and model.geom_bodyid[g] != model.geom_bodyid[table]
             and model.geom_bodyid[g] != 0]
    assert len(robot) > 10
    return min(mujoco.mj_geomDistance(model, data, g, table, 0.2, None) for g in robot)   # capped at 0.2


def _world_of(sim, link: str) -> np.ndarray:
    """A link's world pose (4x4) from the published tree: link_transforms from base_link, placed by odometry."""
    from sim_bridges.geometry import quat_to_matrix

    edges = {t.child: t for t in sim.link_transforms()}

    def pose(p) -> np.ndarray:
        out = np.eye(4)
        out[:3, :3] = quat_to_matrix(p.orientation)
        out[:3, 3] = p.position
        return out

    if link not in edges:
        return pose(sim.base_odometry().pose)
    return _world_of(sim, edges[link].parent) @ pose(edges[link].pose)


def _ee(sim) -> np.ndarray:
    return _world_of(sim, "panda_grasptarget")[:3, 3]


def _body_and_link(p, cid, body_name: bytes, link: bytes):
    """(body id, link index) of the body named ``body_name`` and its link ``link``."""
    body = next(p.getBodyUniqueId(i, physicsClientId=cid) for i in range(p.getNumBodies(physicsClientId=cid))
                if p.getBodyInfo(p.getBodyUniqueId(i, physicsClientId=cid), physicsClientId=cid)[1] == body_name)
    index = next(j for j in range(p.getNumJoints(body, physicsClientId=cid))
                 if p.getJointInfo(body, j, physicsClientId=cid)[12] == link)
    return body, index


def test_arm_reaches_the_far_corners(scene_cache):
    """The grasp point can go to the cube region's far corners at grasp and lift height (targets relative to
    the base, which creeps ~1 mm/s under its zero-velocity wheel motors; within 2 cm: IK sag at full reach)."""
    sim = scene_cache("mobile_table")
    for target in ([0.76, 0.25, CUBE_REST_Z], [0.76, -0.25, CUBE_REST_Z + 0.14], [0.44, 0.25, CUBE_REST_Z]):
        sim.reset(0)
        for _ in range(120):
            pos = _ee(sim)
            base = sim.base_odometry().pose.position
            d = np.clip(np.asarray(target) + [base[0], base[1], 0.0] - pos, -0.015, 0.015)
            sim.set_end_effector_delta(*d)
            sim.step(1)
        pos = _ee(sim)
        base = sim.base_odometry().pose.position
        assert np.linalg.norm(pos - np.asarray(target) - [base[0], base[1], 0.0]) < 0.02, target


def test_end_effector_steps_do_not_depend_on_how_far_the_base_has_driven(scene_cache):
    """The wheels are continuous joints: their angles grow as the base drives (~150 rad after 12 m).
    The arm's IK must ignore them; it once crawled at a tenth of the commanded speed after a long drive."""
    sim = scene_cache("mobile_table")
    wheels = [n for n in sim.joint_names if "wheel" in n]
    assert len(wheels) == 2
    moved = {}
    for wheel_angle in (0.0, 150.0, -150.0):
        sim.reset(0)
        _set_joint_positions(sim, wheels, wheel_angle)
        start = _ee(sim)
        for _ in range(20):
            sim.set_end_effector_delta(0.015, 0.0, 0.0)
            sim.step(1)
        end = _ee(sim)
        moved[wheel_angle] = float(end[0] - start[0])
    assert moved[0.0] > 0.05, moved                       # the steps do move the hand (20 x 1.5 cm commanded)
    for angle in (150.0, -150.0):
        assert moved[angle] == pytest.approx(moved[0.0], abs=0.01), moved


def test_the_two_fingers_mirror_each_other(scene_cache):
    """The Franka Hand's fingers are coupled; uncoupled, a held cube slid the finger pair to one limit and
    stayed in the opened hand. Pushing one finger outward must move the other outward by as much."""
    sim = scene_cache("mobile_table")
    sim.reset(0)
    sim.set_gripper(False)
    for _ in range(30):
        sim.step(1)
    # drive only the first finger open; the coupling (PyBullet: a gear constraint; MuJoCo: the URDF's
    # <mimic> as a joint equality) must carry the second along
    names = list(sim.joint_names)
    fingers = [names.index(n) for n in names if "finger_joint" in n]
    if hasattr(sim, "client_id"):
        import pybullet as p

        cid = sim.client_id
        body, _ = _body_and_link(p, cid, b"mobile_manipulator", b"panda_grasptarget")
        index = {p.getJointInfo(body, j, physicsClientId=cid)[1].decode(): j
                 for j in range(p.getNumJoints(body, physicsClientId=cid))}
        a_j, b_j = (index[names[i]] for i in fingers)
        p.setJointMotorControl2(body, a_j, p.POSITION_CONTROL, targetPosition=0.03, force=20.0, physicsClientId=cid)
        p.setJointMotorControl2(body, b_j, p.VELOCITY_CONTROL, targetVelocity=0.0, force=0.0, physicsClientId=cid)
        for _ in range(30):
            sim.step(1)
    else:   # MuJoCo: the first finger's servo to 0.03, the second's servo switched off (no force)
        import mujoco

        model = sim.model
        a_act, b_act = (mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, f"servo_{names[i]}") for i in fingers)
        saved = model.actuator_gainprm[b_act].copy(), model.actuator_biasprm[b_act].copy()
        try:
            model.actuator_gainprm[b_act] = 0.0
            model.actuator_biasprm[b_act] = 0.0
            sim.data.ctrl[a_act] = 0.03
            for _ in range(30):
                sim.step(1)
        finally:
            model.actuator_gainprm[b_act], model.actuator_biasprm[b_act] = saved
    a, b = (sim.joint_state().position[i] for i in fingers)
    assert a > 0.02 and b == pytest.approx(a, abs=0.003), (a, b)


def _gripper_yaw_deg(sim) -> float:
    """Heading of the downward gripper's x axis in the world (the base starts facing +x)."""
    m = _world_of(sim, "panda_grasptarget")[:3, :3]
    return float(np.degrees(np.arctan2(m[1, 0], m[0, 0])))


def _set_joint_positions(sim, names, value: float) -> None:
    """Put joints at ``value`` directly (the engine's own state write; no contract call does this)."""
    if hasattr(sim, "client_id"):
        import pybullet as p

        cid = sim.client_id
        body, _ = _body_and_link(p, cid, b"mobile_manipulator", b"panda_grasptarget")
        for j in range(p.getNumJoints(body, physicsClientId=cid)):
            if p.getJointInfo(body, j, physicsClientId=cid)[1].decode() in names:
                p.resetJointState(body, j, value, physicsClientId=cid)
        return
    import mujoco

    for name in names:
        jid = mujoco.mj_name2id(sim.model, mujoco.mjtObj.mjOBJ_JOINT, name)
        sim.data.qpos[sim.model.jnt_qposadr[jid]] = value
    mujoco.mj_forward(sim.model, sim.data)


def test_wrist_yaw_turns_the_gripper_in_place_and_later_steps_keep_it(scene_cache):
    """set_end_effector_yaw squares the fingers to a turned cube: the gripper turns about its own axis
    (the grasp point stays within 5 mm), end-effector steps afterwards keep the yaw, a reset forgets it,
    and a yaw beyond a half turn's symmetry is refused."""
    sim = scene_cache("mobile_table")
    sim.reset(0)
    sim.step(10)
    start = _ee(sim)
    for yaw_deg in (40.0, -45.0):
        sim.set_end_effector_yaw(np.radians(yaw_deg))
        sim.step(60)   # 1 s at the scene's 60 Hz: a turn runs at 2 rad/s
        pos = _ee(sim)
        assert _gripper_yaw_deg(sim) == pytest.approx(yaw_deg, abs=1.5)
        assert np.linalg.norm(pos - start) < 0.005
    for _ in range(20):
        sim.set_end_effector_delta(0.0, 0.0, -0.005)
        sim.step(1)
    pos = _ee(sim)
    assert pos[2] < start[2] - 0.02                                       # the steps moved the hand down
    assert np.linalg.norm(pos[:2] - start[:2]) < 0.01
    assert _gripper_yaw_deg(sim) == pytest.approx(-45.0, abs=1.5)
    with pytest.raises(ValueError, match="pi/2"):
        sim.set_end_effector_yaw(2.0)
    sim.reset(0)
    for _ in range(20):
        sim.set_end_effector_delta(0.0, 0.0, 0.0)
        sim.step(1)
    assert _gripper_yaw_deg(sim) == pytest.approx(0.0, abs=1.5)


def test_the_target_can_be_the_toy_brick():
    """``target_kind="lego"``: the target is home_kinds' brick, resting on its flat side on the
    table or the floor; the distractor stays a cube; an unknown kind is refused."""
    from sim_bridges.scenes.kinds import KINDS
    from sim_bridges.scenes.mobile_table import FLOOR_REST_Z, TABLE_TOP

    brick = KINDS["lego"]
    w, d, h = brick.extents
    assert 0.045 <= min(w, d) and max(w, d) <= 0.055 and 0.03 <= h <= 0.04   # graspable: fits the 8 cm hand
    for support, top in (("table", TABLE_TOP), ("floor", 0.0)):
        spec = make_scene("mobile_table", support=support, target_kind="lego")
        objs = {o.name: o for o in spec.objects}
        assert objs[TARGET].kind == "lego" and objs[TARGET].mesh is not None
        assert objs[DISTRACTOR].kind == "cube"
        poses = spec.sample_object_poses(np.random.default_rng(3))
        assert poses[TARGET].position[2] == pytest.approx(top + 0.5 * h)
        assert poses[DISTRACTOR].position[2] == pytest.approx(top + 0.025)
    assert FLOOR_REST_Z == pytest.approx(0.025)
    with pytest.raises(ValueError, match="target_kind"):
        make_scene("mobile_table", target_kind="duck")
