"""rlstack_description against the simulator: the committed URDF is the robot the sim loads, and
robot_state_publisher's /robot_description and transforms over ROS match the bridge's.

- The committed ``urdf/mobile_manipulator.urdf`` has the kinematic tree (joints, types, parents,
  children, origins, axes, limits) of the URDF text the simulator loads for ``home``, and
  ``tools/export_urdf.py --check`` finds nothing to regenerate (the URDF cannot drift).
- The kinematics core's link poses equal PyBullet's link frames in ``home`` at a non-zero arm pose.
- Real processes: the bridge on ``home`` and robot_state_publisher (its /tf and /tf_static remapped,
  so they stay apart from the bridge's link tree): a late transient-local subscriber gets
  /robot_description and it parses; every URDF link is reachable from base_link through the node's
  /tf + /tf_static as received; and the node's transform of each moving joint equals the bridge's
  (PyBullet's) at the same stamp.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest
from conftest import REPO
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from rlstack_description.kinematics import TransformTree, load_urdf, parse_urdf, transforms_equal, tree_summary

URDF = REPO / "ros2_ws" / "src" / "rlstack_description" / "urdf" / "mobile_manipulator.urdf"
LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
TF_STATIC = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _export_tool():
    spec = importlib.util.spec_from_file_location("export_urdf", REPO / "tools" / "export_urdf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tf(t):
    tr, q = t.transform.translation, t.transform.rotation
    return (tr.x, tr.y, tr.z), (q.x, q.y, q.z, q.w)


def test_committed_urdf_has_the_simulators_kinematic_tree():
    export = _export_tool()
    sim = parse_urdf(export.sim_urdf_text("home"), "simulator home robot")
    committed = load_urdf(str(URDF))
    assert committed.root == sim.root == "base_link"
    assert committed.links == sim.links
    assert tree_summary(committed) == tree_summary(sim)
    assert len(committed.moving_joints) == 11   # 2 wheels, 7 arm joints, 2 fingers
    assert export.main(["--check"]) == 0, "run python tools/export_urdf.py"


def test_kinematics_core_matches_pybullet_link_frames():
    sys.path.insert(0, str(REPO / "sim_bridges"))
    from sim_bridges import make_backend

    model = load_urdf(str(URDF))
    pose = {"panda_joint1": 0.4, "panda_joint2": -0.6, "panda_joint3": 0.3, "panda_joint4": -2.0,
            "panda_joint5": 0.5, "panda_joint6": 1.9, "panda_joint7": -0.7}
    with make_backend("pybullet") as sim:
        sim.load_scene("home")
        sim.set_joint_targets(list(pose), list(pose.values()))
        sim.step(30)
        js = sim.joint_state()
        positions = dict(zip(js.names, (float(v) for v in js.position)))
        links = sim.link_transforms()
    assert abs(positions["panda_joint4"] + 2.0) < 0.2, "the arm did not move to the test pose"
    seen = set()
    for lt in links:
        joint = model.parent_joint(lt.child)
        assert joint is not None and joint.parent == lt.parent, (lt.parent, lt.child)
        ours = model.joint_transform(joint, positions.get(joint.name, 0.0))
        theirs = (tuple(lt.pose.position), tuple(lt.pose.orientation))
        assert transforms_equal(ours, theirs, 1e-5), (joint.name, ours, theirs)
        seen.add(lt.child)
    assert seen == set(model.links) - {model.root}


def test_description_and_transforms_over_ros(ros_processes, ros_probe, params_dir):
    bridge = ros_processes.start_node("rlstack_sim", "sim_bridge", params_file=params_dir / "sim_bridge.yaml",
                                      params={"scene": "home", "mode": "realtime", "camera_enabled": False})
    rsp = ros_processes.start_node("rlstack_description", "robot_state_publisher",
                                   params={"publish_frequency": 50.0},
                                   remaps={"/tf": "/rsp/tf", "/tf_static": "/rsp/tf_static"})
    rsp.wait_for_output("publishing /tf and /tf_static", timeout=20)
    ros_probe.wait_for_subscribers("/joint_states", count=1, timeout=20)   # the node listens

    # A subscriber that joins after the publish still gets the description (transient local).
    text = ros_probe.collect("/robot_description", String, count=1, timeout=10, qos=LATCHED)[0].data
    model = parse_urdf(text, "/robot_description")
    assert model.links == load_urdf(str(URDF)).links

    tree = TransformTree()
    static = ros_probe.collect("/rsp/tf_static", TFMessage, count=1, timeout=10, qos=TF_STATIC)[0]
    for t in static.transforms:
        tree.set(t.header.frame_id, t.child_frame_id, _tf(t))
    assert {t.child_frame_id for t in static.transforms} == {j.child for j in model.fixed_joints}

    ours_q = ros_probe.subscribe("/rsp/tf", TFMessage, qos=100)
    bridge_q = ros_probe.subscribe("/tf", TFMessage, qos=100)
    ours, bridge_tf = {}, {}   # (child, stamp ns) -> transform
    moving = {j.child for j in model.moving_joints}

    def matched():
        for q, store in ((ours_q, ours), (bridge_q, bridge_tf)):
            for msg in q.pop_all():
                for t in msg.transforms:
                    key = (t.child_frame_id, t.header.stamp.sec * 10**9 + t.header.stamp.nanosec)
                    store[key] = (t.header.frame_id, _tf(t))
                    if store is ours:
                        tree.set(t.header.frame_id, t.child_frame_id, _tf(t))
        common = {k for k in ours if k in bridge_tf}
        return {c for c, _ in common} >= moving and set(model.links) <= tree.frames()

    ros_probe.spin_until(matched, 20, "the node's /tf for every moving joint at a stamp the bridge also published")
    assert sorted(tree.reachable("base_link", model.links)) == sorted(model.links)
    for key in {k for k in ours if k in bridge_tf}:
        (p1, t1), (p2, t2) = ours[key], bridge_tf[key]
        assert p1 == p2 and transforms_equal(t1, t2, 1e-5), (key, t1, t2)
    # the chain base_link -> grasp target composes from the received transforms alone
    tree.lookup("base_link", "panda_grasptarget")
    ros_processes.assert_all_alive()
    assert bridge.alive() and rsp.alive()


def test_frame_prefix_and_description_only(ros_processes, ros_probe):
    model = load_urdf(str(URDF))
    prefixed = ros_processes.start_node("rlstack_description", "robot_state_publisher", name="rsp_prefixed",
                                        params={"frame_prefix": "r1/"})
    static = ros_probe.collect("/tf_static", TFMessage, count=1, timeout=15, qos=TF_STATIC)[0]
    assert sorted(t.child_frame_id for t in static.transforms) == sorted("r1/" + j.child for j in model.fixed_joints)
    assert all(t.header.frame_id.startswith("r1/") for t in static.transforms)
    prefixed.stop()

    # publish_tf false: /robot_description only (the simulator bridge publishes the links)
    only = ros_processes.start_node("rlstack_description", "robot_state_publisher", name="rsp_description_only",
                                    params={"publish_tf": False})
    only.wait_for_output("/robot_description only", timeout=15)
    ros_probe.collect("/robot_description", String, count=1, timeout=10, qos=LATCHED)
    endpoints = {name for topic in ("/tf", "/tf_static", "/joint_states")
                 for name in (i.node_name for i in ros_probe.node.get_publishers_info_by_topic(topic)
                              + ros_probe.node.get_subscriptions_info_by_topic(topic))}
    assert "rsp_description_only" not in endpoints, endpoints


def test_hostile_joint_states_are_counted_and_the_node_goes_on(ros_processes, ros_probe):
    from rlstack_testing.hostile import hostile_messages

    rsp = ros_processes.start_node("rlstack_description", "robot_state_publisher")
    pub = ros_probe.publisher("/joint_states", JointState)
    tf_q = ros_probe.subscribe("/tf", TFMessage, qos=100)
    diag_q = ros_probe.subscribe("/diagnostics", DiagnosticArray)
    hostile = [m for _, m in hostile_messages(JointState)]
    arm = JointState(name=["panda_joint1", "panda_joint2"], position=[float("nan"), 0.2])
    hostile += [arm, JointState(name=["panda_joint1"], position=[0.1, 0.2])]
    for msg in hostile:
        pub.publish(msg)
    good = JointState(name=["panda_joint4"], position=[-1.5])
    good.header.stamp.sec = 12345
    pub.publish(good)

    def published_good():
        return any(t.child_frame_id == "panda_link4" and t.header.stamp.sec == 12345
                   for m in tf_q.pop_all() for t in m.transforms)

    ros_probe.spin_until(published_good, 10, "the good message's transform on /tf")
    counts = {}

    def counted():
        for m in diag_q.pop_all():
            for st in m.status:
                if st.name.startswith("robot_state_publisher"):
                    counts.update({kv.key: kv.value for kv in st.values})
        return {"rejected.length", "rejected.unknown_joint", "rejected.non_finite"} <= set(counts)

    ros_probe.spin_until(counted, 10, "rejected counts on /diagnostics")
    assert int(counts["rejected.non_finite"]) >= 1 and int(counts["rejected.length"]) >= 1
    assert int(counts["joint_states_received"]) >= 3   # a burst past the queue depth (10) may lose some
    assert rsp.alive(), rsp.tail()


def test_bad_urdf_exits_with_one_line(ros_processes, tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text('<robot name="r"><link name="a"/><joint name="j" type="revolute"><parent link="a"/>'
                   '<child link="b"/></joint></robot>')
    rsp = ros_processes.start_node("rlstack_description", "robot_state_publisher", params={"urdf_file": str(bad)})
    assert rsp.wait(timeout=15) == 2
    errors = [ln for ln in rsp.log_text().splitlines() if "error" in ln.lower()]
    assert errors == [f"error: {bad}: joint 'j': child link 'b' is not a <link> of the robot"], rsp.log_text()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
