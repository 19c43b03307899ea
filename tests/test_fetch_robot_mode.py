"""The fetch graph in robot mode (launch/fetch.launch.yaml robot_mode:=true), real processes.

* No robot-side node (perception, grasp pose, navigation, policy node, mission) subscribes to the
  simulator's ground truth: the live graph is inspected node by node.
* The grasp_pose service answers on the running graph: a hint where nothing is gives
  TARGET_NOT_VISIBLE (a reason, not a crash), a non-finite hint BAD_INPUT.

A whole fetch in robot mode (the default) is tests/test_fetch_system.py's.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rlstack_mission.graph import wait_until_ready
from rlstack_testing.domain import lease_domain_id
from rlstack_testing.processes import ProcessGroup
from rlstack_testing.probe import RosProbe

REPO = Path(__file__).resolve().parents[1]
HOME_MAP = str(REPO / "maps" / "home.yaml")
ROBOT_SIDE = ("semantic_map", "grasp_pose", "nav_controller", "policy_node", "mission")


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    lease = lease_domain_id()
    processes = ProcessGroup(lease.domain_id, tmp_path_factory.mktemp("robot-mode-logs"))
    probe = RosProbe(lease.domain_id, name="robot_mode_test")
    spinner = threading.Thread(target=probe.executor.spin, daemon=True)
    spinner.start()
    try:
        processes.start_graph(REPO / "launch" / "fetch.launch.yaml", {"robot_mode": "true"}, name="fetch_graph",
                              grace=10.0)
        runner = processes.processes[0]
        wait_until_ready(probe.node, runner.alive, timeout_s=150.0, log_hint=runner.name)
        yield probe, processes
    finally:
        processes.stop_all(grace=10.0)
        probe.executor.shutdown(timeout_sec=5.0)
        probe.close()
        lease.release()


def test_no_robot_side_node_reads_simulator_truth(graph):
    probe, _ = graph
    names = {n for n, _ in probe.node.get_node_names_and_namespaces()}
    assert set(ROBOT_SIDE) <= names, f"robot-side nodes missing from the graph: {set(ROBOT_SIDE) - names}"
    for name in ROBOT_SIDE:
        topics = [t for t, _ in probe.node.get_subscriber_names_and_types_by_node(name, "/")]
        assert topics, f"{name} subscribes to nothing?"
        truth = [t for t in topics if t.startswith("/sim_ground_truth")]
        assert not truth, f"{name} reads simulator truth in robot mode: {truth}"
    # the evaluator's side of the graph still has it (the bridge publishes it)
    assert probe.node.count_publishers("/sim_ground_truth/markers") >= 1


def test_grasp_pose_service_refuses_with_a_reason(graph):
    from rlstack_interfaces.srv import EstimateGraspPose

    probe, _ = graph
    req = EstimateGraspPose.Request(views=2)
    req.hint.header.frame_id = "base_link"
    req.hint.point.x, req.hint.point.z = 5.0, 0.5       # 5 m ahead, in the air: nothing there
    reply = probe.call(EstimateGraspPose, "/grasp_pose/estimate", req, timeout=30)
    assert not reply.ok and reply.reason.startswith(("TARGET_NOT_VISIBLE", "POSE_UNCERTAIN", "NO_FRAME")), reply.reason
    req.hint.point.x = float("nan")
    reply = probe.call(EstimateGraspPose, "/grasp_pose/estimate", req, timeout=30)
    assert not reply.ok and reply.reason.startswith("BAD_INPUT"), reply.reason
    req.hint.point.x, req.frame_id = 0.6, "no_such_frame"
    reply = probe.call(EstimateGraspPose, "/grasp_pose/estimate", req, timeout=30)
    assert not reply.ok and reply.reason.startswith("BAD_INPUT") and "no_such_frame" in reply.reason, reply.reason

