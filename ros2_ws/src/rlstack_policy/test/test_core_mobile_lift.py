"""The policy core on the mobile-lift bundle's descriptor (policies/mobile_lift/io.yaml).

* ``/grasp_target`` (``geometry_msgs/msg/PoseStamped``) is read through the dotted fields
  ``pose.position.x|y|z`` and ``pose.orientation`` (sin/cos 4 x yaw), no key or index needed;
* the grasp point comes from the ``/tf`` chain base_link -> ... -> panda_grasptarget (odom -> base_link
  in the same messages does not change it: the observation is in base_link);
* the descriptor's safe actions are zero for the deltas and ``hold`` for the gripper: a node that
  stops while the gripper is closed keeps it closed.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from geometry_msgs.msg import PoseStamped, TransformStamped, Vector3
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool
from tf2_msgs.msg import TFMessage

from rlstack_policy import core

REPO = Path(__file__).resolve().parents[4]
IO = yaml.safe_load((REPO / "policies/mobile_lift/io.yaml").read_text())


def _tf(*chain):
    out = []
    for parent, child, xyz, yaw in chain:
        t = TransformStamped()
        t.header.frame_id, t.child_frame_id = parent, child
        t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = xyz
        t.transform.rotation.z, t.transform.rotation.w = math.sin(yaw / 2), math.cos(yaw / 2)
        out.append(t)
    return TFMessage(transforms=out)


def _target(x, y, z, yaw):
    msg = PoseStamped()
    msg.header.frame_id = "base_link"
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = x, y, z
    msg.pose.orientation.z, msg.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    return msg


def test_pose_stamped_fields_and_tf_in_base_link():
    obs, act = core.compile_io(IO)   # no key_indices needed: PoseStamped has no sequences
    assert obs.topics == {"/tf": "tf2_msgs/msg/TFMessage", "/joint_states": "sensor_msgs/msg/JointState",
                          "/grasp_target": "geometry_msgs/msg/PoseStamped"}
    assert act.topics == {"/arm/ee_delta": "geometry_msgs/msg/Vector3", "/arm/gripper": "std_msgs/msg/Bool"}
    target_z = next(t for t in IO["observation"] if t["name"] == "target_dz")["source"]["derive"]["constant"]
    for odom_xy, odom_yaw in (((0.0, 0.0), 0.0), ((2.5, -1.0), 2.0)):   # the base anywhere: same observation
        asm = core.ObservationAssembler(obs, 0.05, 0.15)
        tf = _tf(("odom", "base_link", (*odom_xy, 0.08), odom_yaw),
                 ("base_link", "panda_link0", (0.08, 0.0, 0.125), 0.0),
                 ("panda_link0", "panda_grasptarget", (0.4, 0.1, 0.3), 0.7))
        assert asm.update("/tf", tf, 0.0) is None
        assert asm.update("/joint_states", JointState(name=["panda_finger_joint1", "panda_finger_joint2"],
                                                      position=[0.03, 0.035]), 0.0) is None
        assert asm.update("/grasp_target", _target(0.6, -0.1, 0.445, 0.3), 0.0) is None
        x, fault = asm.assemble(0.0)
        assert fault is None, fault
        ee = np.array([0.48, 0.1, 0.425])
        tgt = np.array([0.6, -0.1, 0.445])
        want = [*ee, 0.065, *tgt, math.sin(1.2), math.cos(1.2), target_z - 0.445, np.linalg.norm(tgt - ee)]
        assert x.tolist() == pytest.approx(want, abs=1e-6)


def test_gripper_safe_action_is_hold():
    _, act = core.compile_io(IO)
    safe = core.parse_safe([], act, IO)
    assert safe == ["zero", "zero", "zero", "hold"]
    s = core.ActionShaper(act, IO["control_rate_hz"], core.parse_max_rate([], act, IO), safe)
    # before the first command, "hold" leaves the gripper alone: no /arm/gripper message at all
    # (it used to send 0, i.e. close, on a first step with a stale input)
    first = core.fill_messages(act, s.safe(), {"/arm/ee_delta": Vector3, "/arm/gripper": Bool})
    assert set(first) == {"/arm/ee_delta"}
    cmd = s.command(np.array([0.5, -0.2, 1.0, -1.0], np.float32))   # moving, gripper closed (carrying)
    s.commit(cmd)
    stop = s.safe()
    assert stop.tolist() == [0.0, 0.0, 0.0, -1.0]
    msgs = core.fill_messages(act, stop, {"/arm/ee_delta": Vector3, "/arm/gripper": Bool})
    assert msgs["/arm/gripper"].data is False                     # stays closed: the cube is not dropped
    assert (msgs["/arm/ee_delta"].x, msgs["/arm/ee_delta"].y, msgs["/arm/ee_delta"].z) == (0.0, 0.0, 0.0)
    s.commit(s.command(np.array([0.0, 0.0, 0.0, 1.0], np.float32)))  # open: holding keeps it open
    assert s.safe().tolist()[3] == 1.0


def test_the_policys_own_command_read_back_never_goes_stale():
    """policies/mobile_lift_perceived reads /arm/gripper (its own last command) as an observation.
    A command holds until the next one: if it went stale, the policy would sit on its safe action
    (which sends no gripper command) and never act again (seen in a floor fetch: "stale /arm/gripper
    (3517 ms old)", then "not lifted within 14 s")."""
    from rlstack_policy.runner import ServeOptions, prepare

    loaded = prepare(str(REPO / "policies/mobile_lift_perceived"), ServeOptions())
    asm = loaded.assembler
    assert asm.latched_topics == {"/arm/gripper"}
    tf = _tf(("odom", "base_link", (0.0, 0.0, 0.08), 0.0), ("base_link", "panda_link0", (0.08, 0.0, 0.125), 0.0),
             ("panda_link0", "panda_grasptarget", (0.4, 0.0, 0.3), 0.0))
    asm.update("/arm/gripper", Bool(data=True), 0.0)
    for t in (0.0, 5.0):
        asm.update("/tf", tf, t)
        asm.update("/joint_states", JointState(name=["panda_finger_joint1", "panda_finger_joint2"],
                                               position=[0.04, 0.04]), t)
        asm.update("/grasp_target", _target(0.6, 0.0, -0.055, 0.0), t)
        obs, fault = asm.assemble(t)
        assert fault is None, fault          # 5 s after the last /arm/gripper: still usable
    # a stream that stops still goes stale: the grasp target here
    asm.update("/tf", tf, 10.0)
    asm.update("/joint_states", JointState(name=["panda_finger_joint1", "panda_finger_joint2"],
                                           position=[0.04, 0.04]), 10.0)
    obs, fault = asm.assemble(10.0)
    assert obs is None and "stale /grasp_target" in fault
