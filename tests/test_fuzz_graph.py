"""Every subscriber and service of the robot-side fetch graph under hostile input (issue 20).

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
``python -m rlstack_testing.fuzz`` (docs/reliability.md).
"""

from __future__ import annotations

from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState

from rlstack_testing.fuzz import discover, fuzz_graph, table
from rlstack_testing.processes import descendant_pids, inet_sockets

NODES = ("localizer", "semantic_map", "nav_controller", "policy_node", "grasp_pose", "mission")


def test_robot_graph_survives_hostile_input(ros_processes, ros_probe, repo):
    runner = ros_processes.start_graph(repo / "launch" / "fetch.launch.yaml",
                                       {"sim": False, "use_sim_time": False})
    for name in NODES:
        ros_probe.wait_for_node(name, timeout=60.0)
    for transition in (Transition.TRANSITION_CONFIGURE, Transition.TRANSITION_ACTIVATE):
        reply = ros_probe.call(ChangeState, "/policy_node/change_state",
                               ChangeState.Request(transition=Transition(id=transition)), timeout=30.0)
        assert reply.success, transition
    names = [(n, "/") for n in NODES]
    topics, services = discover(ros_probe.node, names)
    # the readers the graph is known to have are all found (discovery, not a hand-written list)
    for topic in ("/initialpose", "/goal_pose", "/odom", "/tf", "/tf_static", "/joint_states"):
        assert topic in topics, sorted(topics)
    assert any("depth" in t for t in topics) and any("camera_info" in t for t in topics)
    assert "/semantic_map/query" in services and "/grasp_pose/estimate" in services

    def dead():
        return [] if runner.alive() else [runner.tail(20)]

    report = fuzz_graph(ros_probe.node, ros_probe.executor, names, dead, repeats=2, flood_s=0.5)
    summary = table(report)
    assert not report.crashes, summary
    runner_alive = runner.alive()
    assert runner_alive, runner.tail(60)
    assert all(report.responsive.values()), report.responsive
    assert len(report.targets) >= len(topics), summary
    before = sum(sum(c.values()) for c in report.rejected_before.values())
    after = sum(sum(c.values()) for c in report.rejected_after.values())
    assert after > before, (report.rejected_before, report.rejected_after)
    nodes = descendant_pids(runner.pid)
    assert len(nodes) >= len(NODES)
    assert {pid: inet_sockets(pid) for pid in [runner.pid, *nodes] if inet_sockets(pid)} == {}
