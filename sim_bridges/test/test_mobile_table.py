"""The ``mobile_table`` scene: mobile manipulator in front of a home-size table, target cube on it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim_bridges.geometry import yaw_from_quat
from sim_bridges.scenes import make_scene, scene_names
from sim_bridges.scenes.home import TABLE_SIZE
from sim_bridges.scenes.mobile_table import (CUBE_REGION, CUBE_REST_Z, CUBE_SEPARATION, DISTRACTOR, TABLE_EDGE_X,
                                             TARGET)


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
    import pybullet as p

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
    cid = sim.client_id
    ids = [p.getBodyUniqueId(i, physicsClientId=cid) for i in range(p.getNumBodies(physicsClientId=cid))]
    robot = next(b for b in ids if p.getBodyInfo(b, physicsClientId=cid)[1] == b"mobile_manipulator")
    tables = [b for b in ids if b != robot and abs(p.getAABB(b, physicsClientId=cid)[0][0] - TABLE_EDGE_X) < 0.03
              and abs(p.getAABB(b, physicsClientId=cid)[1][2] - 0.5) < 0.03]
    assert len(tables) == 1
    table = tables[0]
    assert not p.getClosestPoints(robot, table, 0.1, physicsClientId=cid), "robot within 10 cm of the table"
    for name in sim.camera_names:
        frame = sim.camera_frame(name)
        assert frame.rgb.shape == (240, 320, 3) and frame.rgb.std() > 5


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
    import pybullet as p

    sim = scene_cache("mobile_table")
    cid = sim.client_id
    body, ee = _body_and_link(p, cid, b"mobile_manipulator", b"panda_grasptarget")
    for target in ([0.76, 0.25, CUBE_REST_Z], [0.76, -0.25, CUBE_REST_Z + 0.14], [0.44, 0.25, CUBE_REST_Z]):
        sim.reset(0)
        for _ in range(120):
            pos = np.array(p.getLinkState(body, ee, computeForwardKinematics=1, physicsClientId=cid)[4])
            base = sim.base_odometry().pose.position
            d = np.clip(np.asarray(target) + [base[0], base[1], 0.0] - pos, -0.015, 0.015)
            sim.set_end_effector_delta(*d)
            sim.step(1)
        pos = np.array(p.getLinkState(body, ee, computeForwardKinematics=1, physicsClientId=cid)[4])
        base = sim.base_odometry().pose.position
        assert np.linalg.norm(pos - np.asarray(target) - [base[0], base[1], 0.0]) < 0.02, target


def test_end_effector_steps_do_not_depend_on_how_far_the_base_has_driven(scene_cache):
    """The wheels are continuous joints: their angles grow as the base drives (~150 rad after 12 m).
    The arm's IK must ignore them; it once crawled at a tenth of the commanded speed after a long drive."""
    import pybullet as p

    sim = scene_cache("mobile_table")
    cid = sim.client_id
    body, ee = _body_and_link(p, cid, b"mobile_manipulator", b"panda_grasptarget")
    wheels = [j for j in range(p.getNumJoints(body, physicsClientId=cid))
              if b"wheel" in p.getJointInfo(body, j, physicsClientId=cid)[1]]
    assert len(wheels) == 2
    moved = {}
    for wheel_angle in (0.0, 150.0, -150.0):
        sim.reset(0)
        for j in wheels:
            p.resetJointState(body, j, wheel_angle, physicsClientId=cid)
        start = np.array(p.getLinkState(body, ee, computeForwardKinematics=1, physicsClientId=cid)[4])
        for _ in range(20):
            sim.set_end_effector_delta(0.015, 0.0, 0.0)
            sim.step(1)
        end = np.array(p.getLinkState(body, ee, computeForwardKinematics=1, physicsClientId=cid)[4])
        moved[wheel_angle] = float(end[0] - start[0])
    assert moved[0.0] > 0.05, moved                       # the steps do move the hand (20 x 1.5 cm commanded)
    for angle in (150.0, -150.0):
        assert moved[angle] == pytest.approx(moved[0.0], abs=0.01), moved


def test_the_two_fingers_mirror_each_other(scene_cache):
    """The Franka Hand's fingers are coupled; uncoupled, a held cube slid the finger pair to one limit and
    stayed in the opened hand. Pushing one finger outward must move the other outward by as much."""
    import pybullet as p

    sim = scene_cache("mobile_table")
    cid = sim.client_id
    body, _ = _body_and_link(p, cid, b"mobile_manipulator", b"panda_grasptarget")
    fingers = [j for j in range(p.getNumJoints(body, physicsClientId=cid))
               if b"finger_joint" in p.getJointInfo(body, j, physicsClientId=cid)[1]]
    sim.reset(0)
    sim.set_gripper(False)
    for _ in range(30):
        sim.step(1)
    # drive only the first finger open; the gear constraint must carry the second along
    p.setJointMotorControl2(body, fingers[0], p.POSITION_CONTROL, targetPosition=0.03, force=20.0, physicsClientId=cid)
    p.setJointMotorControl2(body, fingers[1], p.VELOCITY_CONTROL, targetVelocity=0.0, force=0.0, physicsClientId=cid)
    for _ in range(30):
        sim.step(1)
    a, b = (p.getJointState(body, j, physicsClientId=cid)[0] for j in fingers)
    assert a > 0.02 and b == pytest.approx(a, abs=0.003), (a, b)


def _gripper_yaw_deg(p, cid, body, ee) -> float:
    """Heading of the downward gripper's x axis in the world (the base starts facing +x)."""
    m = np.array(p.getMatrixFromQuaternion(p.getLinkState(body, ee, computeForwardKinematics=1,
                                                          physicsClientId=cid)[5])).reshape(3, 3)
    return float(np.degrees(np.arctan2(m[1, 0], m[0, 0])))


def test_wrist_yaw_turns_the_gripper_in_place_and_later_steps_keep_it(scene_cache):
    """set_end_effector_yaw squares the fingers to a turned cube: the gripper turns about its own axis
    (the grasp point stays within 5 mm), end-effector steps afterwards keep the yaw, a reset forgets it,
    and a yaw beyond a half turn's symmetry is refused."""
    import pybullet as p

    sim = scene_cache("mobile_table")
    cid = sim.client_id
    body, ee = _body_and_link(p, cid, b"mobile_manipulator", b"panda_grasptarget")
    sim.reset(0)
    sim.step(10)
    start = np.array(p.getLinkState(body, ee, computeForwardKinematics=1, physicsClientId=cid)[4])
    for yaw_deg in (40.0, -45.0):
        sim.set_end_effector_yaw(np.radians(yaw_deg))
        sim.step(60)   # 1 s at the scene's 60 Hz: a turn runs at 2 rad/s
        pos = np.array(p.getLinkState(body, ee, computeForwardKinematics=1, physicsClientId=cid)[4])
        assert _gripper_yaw_deg(p, cid, body, ee) == pytest.approx(yaw_deg, abs=1.5)
        assert np.linalg.norm(pos - start) < 0.005
    for _ in range(20):
        sim.set_end_effector_delta(0.0, 0.0, -0.005)
        sim.step(1)
    pos = np.array(p.getLinkState(body, ee, computeForwardKinematics=1, physicsClientId=cid)[4])
    assert pos[2] < start[2] - 0.02                                       # the steps moved the hand down
    assert np.linalg.norm(pos[:2] - start[:2]) < 0.01
    assert _gripper_yaw_deg(p, cid, body, ee) == pytest.approx(-45.0, abs=1.5)
    with pytest.raises(ValueError, match="pi/2"):
        sim.set_end_effector_yaw(2.0)
    sim.reset(0)
    for _ in range(20):
        sim.set_end_effector_delta(0.0, 0.0, 0.0)
        sim.step(1)
    assert _gripper_yaw_deg(p, cid, body, ee) == pytest.approx(0.0, abs=1.5)
