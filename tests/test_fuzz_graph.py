"""Every subscriber and service of the robot-side fetch graph under hostile input.

The robot side of ``launch/fetch.launch.yaml`` (``sim:=false``: localizer, semantic_map,
nav_controller, policy_node, grasp_pose, mission) runs as real processes. The lift controller is
configured and activated first, so its observation subscriptions exist too. Then
:func:`rlstack_testing.fuzz.fuzz_graph` sends every topic the graph reads (found by graph
introspection) NaN/inf/huge values, empty and oversized arrays, unknown and empty frames, stale,
future and backwards stamps, malformed images (sizes that disagree with the data, unknown
encodings, claimed 100,000 x 100,000 pixels), degenerate transforms, and a flood; and calls every
service with hostile requests. Nothing may crash, every node must still answer a parameter request
afterwards, and the nodes' ``rejected*`` counters on /diagnostics must show the input turned away.
Every process of the graph holds no TCP or UDP socket afterwards either (the middleware rule,
tests/test_middleware.py, over every node of the fetch graph). The full run with its table:
``python -m rlstack_testing.fuzz`` (docs/reference/reliability.md).
"""

from __future__ import annotations

from lifecycle_msgs.srv import GetState

from rlstack_interfaces.srv import EstimateGraspPose, QueryObjects
from rlstack_testing.fuzz import activate_lifecycle_nodes, discover, fuzz_graph, table
from rlstack_testing.processes import NodeDeaths, descendant_pids, inet_sockets

NODES = ("localizer", "semantic_map", "nav_controller", "policy_node", "grasp_pose", "mission")


def test_robot_graph_survives_hostile_input(ros_processes, ros_probe, repo):
    runner = ros_processes.start_graph(repo / "launch" / "fetch.launch.yaml",
                                       {"sim": False, "use_sim_time": False})
    for name in NODES:
        ros_probe.wait_for_node(name, timeout=60.0)
    # a node shows up before its constructor has made every service (the map loads its text model first)
    for srv_type, name in ((QueryObjects, "/semantic_map/query"), (EstimateGraspPose, "/grasp_pose/estimate")):
        assert ros_probe.node.create_client(srv_type, name).wait_for_service(timeout_sec=60.0), name
    names = [(n, "/") for n in NODES]
    activate_lifecycle_nodes(ros_probe.node, ros_probe.executor, names)
    assert ros_probe.call(GetState, "/policy_node/get_state", GetState.Request()).current_state.label == "active"
    topics, services = discover(ros_probe.node, names)
    # the readers the graph is known to have are all found (discovery, not a hand-written list)
    for topic in ("/initialpose", "/goal_pose", "/odom", "/tf", "/tf_static", "/joint_states"):
        assert topic in topics, sorted(topics)
    assert any("depth" in t for t in topics) and any("camera_info" in t for t in topics)
    assert "/semantic_map/query" in services and "/grasp_pose/estimate" in services

    report = fuzz_graph(ros_probe.node, ros_probe.executor, names, NodeDeaths(runner.pid), repeats=2, flood_s=0.5)
    summary = table(report)
    assert not report.crashes, (report.crashes, runner.tail(120))
    runner_alive = runner.alive()
    assert runner_alive, runner.tail(60)
    assert all(report.responsive.values()), report.responsive
    assert len(report.targets) >= len(topics), summary
    # every node counted input it turned away (its diagnostics status is named after it)
    for name in NODES:
        counted = [sum(c.values()) for status, c in report.rejected_after.items() if status.startswith(name)]
        assert counted and max(counted) > 0, (name, report.rejected_after)
    nodes = descendant_pids(runner.pid)
    assert len(nodes) >= len(NODES)
    assert {pid: inet_sockets(pid) for pid in [runner.pid, *nodes] if inet_sockets(pid)} == {}
