"""Unit tests of the pure core (no rclpy): wiring, assembly, safety, shaping, statistics."""

from __future__ import annotations

import copy
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from geometry_msgs.msg import Pose, PoseArray, Quaternion, Vector3
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool

from rlstack_policy import core

REPO = Path(__file__).resolve().parents[4]
CARTPOLE = yaml.safe_load((REPO / "policies/cartpole/io.yaml").read_text())
BALL = yaml.safe_load((REPO / "policies/ball_plate/io.yaml").read_text())


def js(names, pos, vel=None):
    return JointState(name=list(names), position=list(pos), velocity=list(vel if vel is not None else [0.0] * len(pos)))


def poses(*xyz):
    msg = PoseArray()
    for x, y, z in xyz:
        p = Pose()
        p.position.x, p.position.y, p.position.z = x, y, z
        msg.poses.append(p)
    return msg


# ----------------------------------------------------------------------------- wiring
def test_core_imports_no_rclpy_and_no_torch():
    import subprocess

    code = "import sys, rlstack_policy.core; print(sorted(m for m in ('rclpy', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_compile_cartpole_reads_joint_states_by_name_in_any_order():
    obs, act = core.compile_io(CARTPOLE)
    assert obs.topics == {"/joint_states": "sensor_msgs/msg/JointState"}
    assert act.topics == {"/cartpole/force": "std_msgs/msg/Float64"} and not act.discrete
    asm = core.ObservationAssembler(obs, 1 / 60, 0.05)
    # joint order differs from training; values must follow the names
    assert asm.update("/joint_states", js(["cart_to_pole", "slider_to_cart"], [0.1, -0.5], [2.0, 0.3]), 0.0) is None
    x, fault = asm.assemble(0.01)
    assert fault is None
    assert x.dtype == np.float32 and x.tolist() == pytest.approx([-0.5, 0.3, 0.1, 2.0])


def test_compile_ball_plate_needs_key_indices_for_posearray():
    with pytest.raises(core.SpecError, match=r"observation\[0\] 'ball_x'.*key_indices.*ball=0"):
        core.compile_io(BALL)
    obs, act = core.compile_io(BALL, {"ball": 0})
    assert set(obs.topics) == {"/sim_ground_truth/poses", "/joint_states"}
    assert act.topics == {"/ball_plate/angles": "geometry_msgs/msg/Vector3"}


def test_finite_difference_over_one_control_period_zero_first():
    obs, _ = core.compile_io(BALL, {"ball": 0})
    asm = core.ObservationAssembler(obs, 1 / 30, 0.1)
    j = js(["plate_pitch", "plate_roll"], [0.01, -0.02])
    asm.update("/joint_states", j, 0.0)
    asm.update("/sim_ground_truth/poses", poses((0.05, -0.02, 0.3), (9, 9, 9)), 0.0)
    x, _ = asm.assemble(0.0)
    assert x.tolist() == pytest.approx([0.05, -0.02, 0.0, 0.0, 0.01, -0.02])
    asm.update("/sim_ground_truth/poses", poses((0.06, -0.02, 0.3)), 1 / 30)
    asm.update("/joint_states", j, 1 / 30)
    x, _ = asm.assemble(1 / 30)
    assert x[2] == pytest.approx(0.3, rel=1e-5) and x[3] == pytest.approx(0.0, abs=1e-6)
    # after a gap longer than the stale limit the difference restarts at 0 (no spike)
    asm.update("/sim_ground_truth/poses", poses((0.5, -0.02, 0.3)), 1.0)
    asm.update("/joint_states", j, 1.0)
    x, _ = asm.assemble(1.0)
    assert x[2] == 0.0


def test_scale_applies_to_raw_value():
    io = copy.deepcopy(CARTPOLE)
    io["observation"][2]["scale"] = 2.0
    obs, _ = core.compile_io(io)
    asm = core.ObservationAssembler(obs, 1 / 60, 0.05)
    asm.update("/joint_states", js(["slider_to_cart", "cart_to_pole"], [0, 0.25]), 0.0)
    assert asm.assemble(0.0)[0][2] == pytest.approx(0.5)


@pytest.mark.parametrize("mutate, match", [
    (lambda io: io["observation"][0]["source"].update(type="no_such_pkg/msg/Thing"),
     "unknown message type 'no_such_pkg/msg/Thing'"),
    (lambda io: io["observation"][0]["source"].update(field="positions"),
     "'positions' is not a field of sensor_msgs/msg/JointState"),
    (lambda io: io["observation"][0]["source"].update(field="header.frame_id"), "ends in type 'string', not a number"),
    (lambda io: io["observation"][0]["source"].update(derive="magic"), "unsupported derive 'magic'"),
    (lambda io: io["action"][0]["target"].update(field="value"), "'value' is not a field of std_msgs/msg/Float64"),
    (lambda io: io["observation"][1]["source"].update(type="std_msgs/msg/Float64", field="data"),
     "used with two types"),
    (lambda io: io.update(format="other/9"), "format must be"),
])
def test_bad_descriptor_is_a_clear_spec_error(mutate, match):
    io = copy.deepcopy(CARTPOLE)
    mutate(io)
    with pytest.raises(core.SpecError, match=match):
        core.compile_io(io)


def test_remaps_apply_to_observation_and_action_topics():
    obs, act = core.compile_io(CARTPOLE, remaps=core.parse_remaps(["/joint_states=/robot/joint_states",
                                                                    "/cartpole/force=/robot/force"]))
    assert list(obs.topics) == ["/robot/joint_states"] and list(act.topics) == ["/robot/force"]
    with pytest.raises(core.SpecError):
        core.parse_remaps(["joint_states"])
    with pytest.raises(core.SpecError):
        core.parse_key_indices(["ball"])


def test_wiring_mismatch_names_the_topic():
    obs, act = core.compile_io(CARTPOLE)
    bobs, bact = core.compile_io(BALL, {"ball": 0})
    assert core.wiring_mismatch(obs.topics, act.topics, obs, act) == []
    problems = core.wiring_mismatch(obs.topics, act.topics, bobs, bact)
    assert any("/sim_ground_truth/poses" in p and "not wired" in p for p in problems)
    assert any("/ball_plate/angles" in p for p in problems)


def test_sum_and_yaw_derives_and_bool_target():
    io = {
        "format": core.IO_FORMAT, "control_rate_hz": 20.0, "model": {"output": {"kind": "continuous"}},
        "observation": [
            {"name": "width", "scale": 1.0, "source": {"topic": "/joint_states", "type": "sensor_msgs/msg/JointState",
                                                       "field": "position", "key": "f1,f2", "derive": "sum of both"}},
            {"name": "s4", "scale": 1.0, "source": {"topic": "/gt", "type": "geometry_msgs/msg/PoseArray",
                                                    "field": "poses[].orientation", "key": "cube",
                                                    "derive": "sin(4 * yaw)"}},
            {"name": "c4", "scale": 1.0, "source": {"topic": "/gt", "type": "geometry_msgs/msg/PoseArray",
                                                    "field": "poses[].orientation", "key": "cube",
                                                    "derive": "cos(4 * yaw)"}},
        ],
        "action": [
            {"name": "dx", "limits": [-0.015, 0.015], "scale": 0.015, "offset": 0.0,
             "target": {"topic": "/arm/ee_delta", "type": "geometry_msgs/msg/Vector3", "field": "x"}},
            {"name": "grip", "limits": [-1, 1], "scale": 1.0, "offset": 0.0,
             "target": {"topic": "/arm/gripper", "type": "std_msgs/msg/Bool", "field": "data",
                        "derive": "open = value > 0"}},
        ],
    }
    obs, act = core.compile_io(io, {"cube": 1})
    asm = core.ObservationAssembler(obs, 0.05, 0.15)
    asm.update("/joint_states", js(["f1", "x", "f2"], [0.01, 5.0, 0.015]), 0.0)
    pa = poses((0, 0, 0), (0, 0, 0))
    yaw = 0.3
    pa.poses[1].orientation = Quaternion(z=math.sin(yaw / 2), w=math.cos(yaw / 2))
    asm.update("/gt", pa, 0.0)
    x, fault = asm.assemble(0.0)
    assert fault is None
    assert x.tolist() == pytest.approx([0.025, math.sin(1.2), math.cos(1.2)], abs=1e-6)
    msgs = core.fill_messages(act, np.array([0.01, 0.2]), {"/arm/ee_delta": Vector3, "/arm/gripper": Bool})
    assert msgs["/arm/ee_delta"].x == pytest.approx(0.01) and msgs["/arm/gripper"].data is True
    assert core.fill_messages(act, np.array([0.0, -0.2]),
                              {"/arm/ee_delta": Vector3, "/arm/gripper": Bool})["/arm/gripper"].data is False


def _tf(*chain):
    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage

    out = []
    for parent, child, xyz, yaw in chain:
        t = TransformStamped()
        t.header.frame_id, t.child_frame_id = parent, child
        t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = xyz
        t.transform.rotation.z, t.transform.rotation.w = math.sin(yaw / 2), math.cos(yaw / 2)
        out.append(t)
    return TFMessage(transforms=out)


LIFT_LIKE = {
    "format": core.IO_FORMAT, "control_rate_hz": 20.0, "model": {"output": {"kind": "continuous"}},
    "observation": [
        {"name": f"ee_{a}", "scale": 1.0,
         "source": {"topic": "/tf", "type": "tf2_msgs/msg/TFMessage", "field": "transforms",
                    "derive": {"op": "tf_position", "parent": "world", "child": "tool", "axis": a}}}
        for a in "xyz"
    ] + [
        {"name": f"cube_{a}", "scale": 1.0, "source": {"topic": "/gt", "type": "geometry_msgs/msg/PoseArray",
                                                        "field": f"poses[].position.{a}", "key": "cube"}}
        for a in "xyz"
    ] + [
        {"name": "dz", "scale": 2.0,
         "source": {"topic": "/gt", "type": "geometry_msgs/msg/PoseArray", "field": "poses[].position.z",
                    "key": "cube", "derive": {"op": "offset_minus", "constant": 0.5}}},
        {"name": "dist", "scale": 1.0,
         "source": {"topic": "/gt", "type": "geometry_msgs/msg/PoseArray", "field": "poses[].position",
                    "key": "cube", "derive": {"op": "distance", "a": ["cube_x", "cube_y", "cube_z"],
                                              "b": ["ee_x", "ee_y", "ee_z"]}}},
        {"name": "s4", "scale": 1.0,
         "source": {"topic": "/gt", "type": "geometry_msgs/msg/PoseArray", "field": "poses[].orientation",
                    "key": "cube", "derive": {"op": "sin_kyaw", "k": 4}}},
        {"name": "w", "scale": 1.0,
         "source": {"topic": "/joint_states", "type": "sensor_msgs/msg/JointState", "field": "position",
                    "key": "f1,f2", "derive": {"op": "sum"}}},
    ],
    "action": [{"name": "dx", "limits": [-0.015, 0.015], "scale": 0.015, "offset": 0.0,
                "target": {"topic": "/arm/ee_delta", "type": "geometry_msgs/msg/Vector3", "field": "x"}}],
}


def test_structured_derives_tf_chain_offset_distance():
    obs, _ = core.compile_io(LIFT_LIKE, {"cube": 0})
    assert list(obs.topics) == ["/tf", "/gt", "/joint_states"]
    asm = core.ObservationAssembler(obs, 0.05, 0.15)
    # world -> base (at (1, 0, 0), yawed 90 deg) -> tool (0.5 along the base's x) => tool at (1, 0.5, 0.2)
    tf = _tf(("world", "base", (1.0, 0.0, 0.0), math.pi / 2), ("base", "tool", (0.5, 0.0, 0.2), 0.3))
    assert asm.update("/tf", tf, 0.0) is None
    pa = poses((1.0, 0.5, 0.3))
    pa.poses[0].orientation = Quaternion(z=math.sin(0.1), w=math.cos(0.1))   # yaw 0.2
    assert asm.update("/gt", pa, 0.0) is None
    assert asm.assemble(0.0)[1] == "waiting for /joint_states"
    assert asm.update("/joint_states", js(["f1", "f2"], [0.01, 0.02]), 0.0) is None
    x, fault = asm.assemble(0.0)
    assert fault is None
    assert x.tolist() == pytest.approx([1.0, 0.5, 0.2, 1.0, 0.5, 0.3, 2 * 0.2, 0.1, math.sin(0.8), 0.03], abs=1e-6)
    # a later /tf message with only part of the tree updates those frames (buffer), the chain still resolves
    assert asm.update("/tf", _tf(("base", "tool", (0.0, 0.0, 0.0), 0.0)), 0.01) is None
    x, _ = asm.assemble(0.01)
    assert x[:3].tolist() == pytest.approx([1.0, 0.0, 0.0], abs=1e-6)
    # a broken chain (frame without a parent) is a rejection, the topic is invalid at once
    fresh = core.ObservationAssembler(obs, 0.05, 0.15)
    assert fresh.update("/tf", _tf(("base", "tool", (0.0, 0.0, 0.0), 0.0)), 0.0) == "missing_key"


@pytest.mark.parametrize("derive, msg", [
    ({"op": "magic"}, "unknown op 'magic'"),
    ({"op": "tf_position", "parent": "world", "child": "tool"}, "missing parameter(s) ['axis']"),
    ({"op": "tf_position", "parent": "world", "child": "tool", "axis": "w"}, "axis must be x, y or z"),
    ({"op": "sin_kyaw", "k": "four"}, "k must be a finite number"),
    ({"op": "offset_minus", "constant": 0.5, "of": "x"}, "unknown parameter(s) ['of']"),
    ({"op": "distance", "a": ["cube_x"], "b": ["nope"]}, "unknown term(s) ['nope']"),
    ({"op": "distance", "a": ["cube_x"], "b": ["dist"]}, "computed from terms too"),
])
def test_bad_structured_derive_is_a_configure_error(derive, msg):
    io = copy.deepcopy(LIFT_LIKE)
    io["observation"][6]["source"]["derive"] = derive   # 'dz'
    with pytest.raises(core.SpecError) as exc:
        core.compile_io(io, {"cube": 0})
    assert msg in str(exc.value) and "observation[6] 'dz'" in str(exc.value)


def test_tf_position_needs_a_tf_message_topic():
    io = copy.deepcopy(LIFT_LIKE)
    io["observation"][0]["source"].update(type="geometry_msgs/msg/PoseArray", field="poses")
    with pytest.raises(core.SpecError, match="tf_position reads field 'transforms'"):
        core.compile_io(io, {"cube": 0})


# ----------------------------------------------------------------------------- safety
def test_stale_waiting_nan_and_missing_key_give_faults_and_recover():
    obs, _ = core.compile_io(CARTPOLE)
    asm = core.ObservationAssembler(obs, 1 / 60, 0.05)
    assert asm.assemble(0.0)[1] == "waiting for /joint_states"
    good = js(["slider_to_cart", "cart_to_pole"], [0.0, 0.01])
    asm.update("/joint_states", good, 0.0)
    assert asm.assemble(0.04)[1] is None
    x, fault = asm.assemble(0.06)
    assert x is None and fault.startswith("stale /joint_states")
    assert asm.update("/joint_states", js(["slider_to_cart", "cart_to_pole"], [math.nan, 0.0]), 0.07) == "non_finite"
    assert asm.assemble(0.07)[1] == "non_finite on /joint_states"   # at once, not after the stale limit
    assert asm.update("/joint_states", js(["slider_to_cart", "cart_to_pole"], [0.0, math.inf]), 0.07) == "non_finite"
    assert asm.update("/joint_states", js(["slider_to_cart"], [0.0]), 0.08) == "missing_key"
    assert asm.assemble(0.08)[1] == "missing_key on /joint_states"
    asm.update("/joint_states", good, 0.09)
    assert asm.assemble(0.09)[1] is None


def test_posearray_too_short_is_missing_index():
    obs, _ = core.compile_io(BALL, {"ball": 2})
    asm = core.ObservationAssembler(obs, 1 / 30, 0.1)
    assert asm.update("/sim_ground_truth/poses", poses((0, 0, 0)), 0.0) == "missing_index"


def test_all_updated_requires_every_topic():
    obs, _ = core.compile_io(BALL, {"ball": 0})
    asm = core.ObservationAssembler(obs, 1 / 30, 0.1)
    asm.update("/joint_states", js(["plate_pitch", "plate_roll"], [0, 0]), 0.0)
    assert not asm.all_updated()
    asm.update("/sim_ground_truth/poses", poses((0, 0, 0)), 0.0)
    assert asm.all_updated()
    asm.mark_step()
    assert not asm.all_updated()


def _shaper(io, safe=None, max_rate=None, rate=60.0, **kw):
    _, act = core.compile_io(io, **kw)
    return core.ActionShaper(act, rate, core.parse_max_rate(max_rate or [], act, io),
                             core.parse_safe(safe or [], act, io))


def test_command_matches_training_mapping_and_clips():
    s = _shaper(CARTPOLE)
    assert s.command(np.array([0.5], np.float32)).tolist() == [5.0]
    assert s.command(np.array([3.0], np.float32)).tolist() == [10.0]     # network output clipped to [-1, 1]
    io = copy.deepcopy(CARTPOLE)
    io["action"][0]["offset"] = 5.0
    s = _shaper(io)
    assert s.command(np.array([1.0])).tolist() == [10.0] and s.clipped == 1  # offset + scale beyond limits


def test_rate_limit_per_period():
    s = _shaper(CARTPOLE, max_rate=[600.0])    # 10 N per 60 Hz period
    s.commit(s.command(np.array([-1.0])))
    assert s.command(np.array([1.0])).tolist() == [0.0] and s.rate_limited == 1
    s.commit(np.array([0.0]))
    assert s.command(np.array([1.0])).tolist() == [10.0]
    with pytest.raises(core.SpecError, match="max_rate has 2 entries"):
        _shaper(CARTPOLE, max_rate=[1.0, 2.0])


def test_safe_action_zero_hold_number():
    s = _shaper(BALL, safe=["hold", "zero"], key_indices={"ball": 0})
    first = s.safe()
    assert math.isnan(first[0]) and first[1] == 0.0  # hold before any command: unknown, not 0
    s.commit(first)
    assert math.isnan(s.safe()[0])                   # still unknown until a real command
    s.commit(np.array([0.1, -0.2]))
    assert s.safe().tolist() == [0.1, 0.0]
    s = _shaper(BALL, safe=["0.05", "hold"], key_indices={"ball": 0})
    assert s.safe()[0] == 0.05 and math.isnan(s.safe()[1])
    with pytest.raises(core.SpecError, match="outside its limits"):
        _shaper(BALL, safe=["1.0", "hold"], key_indices={"ball": 0})
    with pytest.raises(core.SpecError, match="zero, hold or a number"):
        _shaper(CARTPOLE, safe=["brake"])
    assert _shaper(CARTPOLE).safe().tolist() == [0.0]  # default: zero


def test_discrete_choices():
    io = copy.deepcopy(CARTPOLE)
    io["model"]["output"]["kind"] = "discrete"
    io["action"][0]["choices"] = [-10.0, 10.0]
    s = _shaper(io)
    assert s.command(np.array([1], np.int64)).tolist() == [10.0]
    with pytest.raises(ValueError):
        s.command(np.array([2], np.int64))


def test_estop_latches_until_reset_while_released():
    e = core.EStopLatch()
    assert e.input(True) and e.latched
    assert not e.input(True)
    ok, why = e.reset()
    assert not ok and "still asserted" in why and e.latched
    e.input(False)
    assert e.latched                      # releasing the input does not clear the latch
    assert e.reset()[0] and not e.latched and e.trips == 1


def test_loop_stats():
    st = core.LoopStats(0.01)
    for i in range(101):
        st.tick(i * 0.01 + (0.002 if i == 50 else 0.0), timer=True)
        st.done(0.0001, 0.0005, safe=False)
    st.tick(1.05, timer=True)  # a missed tick
    s = st.summary(1.05)
    assert s["achieved_rate_hz"] == pytest.approx(100, rel=0.1)
    assert s["overruns"] == 1 and s["latency_p50_ms"] == pytest.approx(0.5)
    assert 1.0 < s["jitter_p99_ms"] < 40.1


def test_real_bundle_runs_through_onnxruntime_without_torch():
    from rlstack_bundle.bundle import load

    b = load(str(REPO / "policies/cartpole"))
    obs, act = core.compile_io(b.io)
    asm = core.ObservationAssembler(obs, 1 / 60, 0.05)
    asm.update("/joint_states", js(["slider_to_cart", "cart_to_pole"], [0.0, 0.05], [0.0, 0.0]), 0.0)
    x, _ = asm.assemble(0.0)
    shaper = core.ActionShaper(act, 60.0, np.zeros(1), ["zero"])
    cmd = shaper.command(b.session.run(None, {"obs": x[None]})[0][0])
    assert cmd.tolist() == pytest.approx(b.command(b.act(x)).tolist())
    assert cmd[0] > 0  # pole leaning +: push the cart + (same sign as in training)
