"""The full fetch graph (launch/fetch.launch.yaml in its default, robot mode: real processes through
the runner): one fetch that succeeds, and one test per failure reason (object not found,
unreachable, grasp failed). In robot mode no robot-side node (perception, grasp pose, navigation,
policy node, mission) may subscribe to the simulator's ground truth: the live graph is inspected
node by node; and the grasp_pose service answers bad requests with reasons.

One graph serves the module (it takes ~25 s to start: the perception models load); each test
resets the simulator to its layout (the seeded ``/sim_bridge/reset``, our extension, then the
target placed with the ROS 2 standard's ``set_entity_state``: rlstack_mission.harness), clears the
semantic map and sets the mission parameters it needs (they apply from the next fetch). Outcomes
are judged from the simulator's ground truth (rlstack_mission.harness), not only from the
mission's own word.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

import pytest
import yaml
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters

from rlstack_common.background_spin import BackgroundSpin
from rlstack_mission.graph import wait_until_ready
from rlstack_mission.harness import FetchHarness
from rlstack_mission.layouts import FetchLayout
from rlstack_testing.domain import lease_domain_id
from rlstack_testing.probe import RosProbe
from rlstack_testing.processes import ProcessGroup

REPO = Path(__file__).resolve().parents[1]
HOME_MAP = str(REPO / "maps" / "home.yaml")
ROBOT_SIDE = ("localizer", "semantic_map", "grasp_pose", "nav_controller", "policy_node", "mission", "_mission_state")
MISSION_YAML = yaml.safe_load((REPO / "launch" / "params" / "mission.yaml").read_text())["/**"]["ros__parameters"]


class Graph:
    def __init__(self, probe: RosProbe, processes: ProcessGroup) -> None:
        self.probe, self.processes = probe, processes
        self.harness = FetchHarness(probe.node)
        self.params = probe.node.create_client(SetParameters, "/mission/set_parameters")

    def set_mission(self, **values) -> None:
        """Set mission parameters (bools, doubles, ints or double lists); they apply from the next fetch."""
        msgs = []
        for name, v in values.items():
            if isinstance(v, bool):
                pv = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=v)
            elif isinstance(v, list):
                pv = ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY, double_array_value=[float(x) for x in v])
            elif isinstance(v, int):
                pv = ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=v)
            else:
                pv = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=float(v))
            msgs.append(Parameter(name=name, value=pv))
        reply = self.harness._call(self.params, SetParameters.Request(parameters=msgs))
        assert all(r.successful for r in reply.results), [r.reason for r in reply.results]

    # 360 s, not 240: a fetch whose cube falls out of the hand on the way is fetched again from the
    # floor (a path the mission is built for), which takes ~260-300 s; a clean clone's run was cut
    # off at 240 s while putting the re-fetched cube down. Behaviour, not speed, is tested.
    def fetch(self, layout: FetchLayout, timeout_s: float = 360.0, on_feedback=None) -> dict:
        try:
            self.harness.apply(layout)
            result = self.harness.fetch(layout, timeout_s, on_feedback=on_feedback)
        except (TimeoutError, RuntimeError) as exc:
            # A stalled graph (seen once in CI: stale odometry, then a reset service that never
            # answered): ask every node where its threads are, and put that in the report.
            self.fail_with_stacks(str(exc))
        self.processes.assert_all_alive()
        return result

    def mission_log(self, lines: Optional[int] = 60, since: int = 0) -> str:
        """The last ``lines`` (None: all) mission lines and node warnings of the graph log from
        character ``since`` on: enough to tell why a fetch failed from a CI log (which phase, what
        each grasp attempt saw, stale inputs, watchdogs)."""
        runner = self.processes.processes[0]
        keep = [line for line in runner.log_text()[since:].splitlines()
                if line.startswith("[mission]") or "[WARN]" in line or "[ERROR]" in line]
        return "\n".join(keep if lines is None else keep[-lines:])

    def fail_with_stacks(self, what: str) -> None:
        runner = self.processes.processes[0]
        runner.dump_stacks()
        pytest.fail(f"{what}\n--- graph log with every node's thread stacks (SIGUSR1) ---\n" + runner.tail(400))


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    lease = lease_domain_id()
    processes = ProcessGroup(lease.domain_id, tmp_path_factory.mktemp("fetch-logs"))
    probe = RosProbe(lease.domain_id, name="fetch_test")
    spin = BackgroundSpin(probe.executor, name="fetch-test-spin")
    try:
        processes.start_graph(REPO / "launch" / "fetch.launch.yaml", name="fetch_graph", grace=10.0)
        runner = processes.processes[0]
        wait_until_ready(probe.node, runner.alive, timeout_s=150.0, log_hint=runner.name)
        yield Graph(probe, processes)
    finally:
        processes.stop_all(grace=10.0)
        # The spinner must have left spin() before the probe's node is destroyed. (The RCLError
        # "wait set index for result client is out of bounds" seen in CI came from a second thread
        # spinning the same executor: tests here never call probe methods that spin.)
        spin.stop()
        probe.close()
        lease.release()


def test_fetch_brings_the_cube_to_the_dropoff(graph):
    layout = graph.harness.layout(1, HOME_MAP)  # the green cube on table_3
    result = graph.fetch(layout)
    if result["code_name"] != "SUCCEEDED":
        graph.fail_with_stacks(f"fetch ended {result['code_name']}: {result}")
    assert result["success"] and result["dropoff_error_m"] <= 0.35 and result["object_final"][2] < 0.15, (
        f"{result}\n--- mission log ---\n{graph.mission_log()}")
    assert list(result["phase_durations"]) [-3:] == ["GRASP", "RETURN", "DROP"]
    assert result["grasp_attempts"] >= 1 and result["distance_driven_m"] > 2.0
    runner = graph.processes.processes[0]
    assert "grasp target from perception" in runner.log_text()     # robot mode: the grasp from the camera


def test_a_cube_that_falls_out_on_the_way_is_noticed_and_never_a_success(graph):
    """The mission watches the hand on the way to the drop-off. (On MuJoCo the cube fell out of the
    closed hand twice, and the put-down with an empty hand was called SUCCEEDED.) Here the
    simulator drops it (the ROS 2 standard's ``/sim_bridge/set_entity_state``, evaluator-side) 1 s
    into the return drive, onto the floor 0.45 m ahead of the base, where the real falls lay (early
    in the ~13 s drive, so that a late feedback message cannot put the drop after the put-down).
    The mission must feel it, stop, and either fetch it again from the floor (SUCCEEDED, then
    judged from ground truth) or end with a reason that says it fell out: never a success the
    evaluator does not see."""
    layout = graph.harness.layout(1, HOME_MAP)
    moved = []
    latest = {"phase": "", "detail": ""}   # the mission's phase as this test last heard it

    def drop() -> None:
        x, y, qz, qw = graph.harness.true_base
        yaw = 2.0 * math.atan2(qz, qw)
        position = (x + 0.45 * math.cos(yaw), y + 0.45 * math.sin(yaw), 0.03)
        ok, message = graph.harness.set_entity_state(layout.target, position,
                                                     (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)))
        heard = f"{latest['phase']}: {latest['detail']}"
        time.sleep(1.0)
        after = graph.harness.ground_truth.get(layout.target)
        moved.append((ok, message, round(position[0], 2), round(position[1], 2),
                      [round(v, 3) for v in after] if after else None, heard))

    def on_feedback(phase: str, detail: str) -> None:   # in the probe's executor: the drop in a thread
        latest.update(phase=phase, detail=detail)
        if phase == "RETURN" and detail.startswith("carrying to") and not moved:
            moved.append(None)
            threading.Timer(1.0, drop).start()

    # The fall is tested on the way back, so the fetch must first reach the return drive with the
    # cube in hand. A fetch that ends before it (in CI a fetch once never got there, and the
    # report said only "[]") tests nothing about the fall: it is run once more, and the report of
    # both tries carries their results and mission logs. The grasp's own success rate is measured
    # by `make eval-fetch`, and the first test here fails on a fetch that does not succeed.
    tries = []
    for _ in range(2):
        moved.clear()
        start = len(graph.processes.processes[0].log_text())
        result = graph.fetch(layout, 300.0, on_feedback=on_feedback)
        # this fetch's mission lines, all of them: a re-fetch after the fall can push the fall out of
        # mission_log()'s last lines (a fresh-clone run failed on that while the mission had felt it)
        log = graph.mission_log(lines=None, since=start)
        if moved:
            break
        tries.append(f"--- a fetch that never carried the cube back: {result}\n{log}")
    time.sleep(2.5)   # a drop timer started near the end of the fetch has finished
    assert len(moved) == 2 and moved[1][0], "\n".join([str(moved), str(result), log, *tries])
    assert moved[1][4] is not None and moved[1][4][2] < 0.1, \
        f"the cube was not on the floor 1 s after the move: {moved}"
    assert moved[1][5].startswith("RETURN: "), f"the drop came while the mission said {moved[1][5]!r}"
    assert "the carried object fell out of the hand" in log, f"{moved}\n{result}\n{log}"
    assert result["object_fell"]["phase"] == "RETURN", result
    if result["code_name"] == "SUCCEEDED":   # fetched again from the floor
        assert result["success"], f"a false success: {result}\n{log}"
        assert result["grasp_attempts"] >= 2
    else:
        assert "fell out of the hand" in result["reason"] and not result["success"], result


def test_object_not_found_after_exploring(graph):
    graph.set_mission(explore_waypoints=[0.0, 0.0, 0.0], look_around_yaws=2, support_looks=False)
    try:
        layout = graph.harness.layout(1, HOME_MAP)
        layout = FetchLayout(**{**layout.__dict__, "query": "the purple elephant"})
        result = graph.fetch(layout, timeout_s=120.0)
    finally:
        graph.set_mission(explore_waypoints=MISSION_YAML["explore_waypoints"],
                          look_around_yaws=MISSION_YAML["look_around_yaws"],
                          support_looks=MISSION_YAML["support_looks"])
    assert result["code_name"] == "NOT_FOUND", result
    assert "purple elephant" in result["reason"] and "1 waypoint" in result["reason"]
    assert not result["success"]


def test_send_fetch_cli_prints_feedback_and_exits_with_the_result_code(graph):
    """``python -m rlstack_mission.send_fetch`` as a user runs it: feedback lines while the mission
    works, the result as JSON, exit status 1 for a fetch that ended other than SUCCEEDED (never a
    hang)."""
    graph.set_mission(explore_waypoints=[0.0, 0.0, 0.0], look_around_yaws=2, support_looks=False)
    try:
        graph.harness.apply(graph.harness.layout(1, HOME_MAP))
        cli = subprocess.run([sys.executable, "-m", "rlstack_mission.send_fetch", "the purple elephant",
                              "--dropoff", "-0.5", "0", "0", "--timeout", "150"],
                             env=graph.processes.env(), capture_output=True, text=True, timeout=200)
    finally:
        graph.set_mission(explore_waypoints=MISSION_YAML["explore_waypoints"],
                          look_around_yaws=MISSION_YAML["look_around_yaws"],
                          support_looks=MISSION_YAML["support_looks"])
    assert cli.returncode == 1, f"exit {cli.returncode}\n{cli.stdout}\n{cli.stderr}"
    feedback = [line for line in cli.stdout.splitlines() if line.startswith("[")]
    assert any(line.startswith("[EXPLORE]") for line in feedback), cli.stdout
    result = json.loads(cli.stdout[cli.stdout.index("{"):])
    assert result["code_name"] == "NOT_FOUND" and "purple elephant" in result["reason"], result
    assert "Traceback" not in cli.stderr


def test_object_on_the_floor_is_fetched_in_robot_mode(graph):
    """The target 1.2 m ahead of the robot's start, on the floor: the robot looks at it from 1 m
    (the camera cannot see the floor closer), holds the estimate, drives in and lifts it. With
    floor_grasps off (what the ground-truth ablation runs) the same object is UNREACHABLE.

    Two tries: floor fetches succeed 16 of 20 in the floor evaluation (docs/reference/mission.md), so one
    try fails a working stack now and then (in CI: three lifts "not lifted within 14 s"
    in one fetch). A broken floor grasp fails both; the first try's result is printed either way."""
    layout = graph.harness.layout(2, HOME_MAP)
    layout = FetchLayout(**{**layout.__dict__, "target_pose": (1.2, 0.0, 0.025, 0.3), "table": "floor"})
    graph.set_mission(explore_waypoints=[0.0, 0.0, 0.0], look_around_yaws=4, floor_grasps=False,
                      support_looks=False)
    tries = []
    try:
        result = graph.fetch(layout, timeout_s=180.0)
        assert result["code_name"] == "UNREACHABLE", result
        assert "floor" in result["reason"] and layout.target.split("_")[0] in result["reason"]
        graph.set_mission(floor_grasps=True)
        for _ in range(2):
            result = graph.fetch(layout, timeout_s=240.0)
            tries.append({k: result.get(k) for k in ("code_name", "reason", "grasp_attempts", "phase_durations")})
            print(f"floor fetch try {len(tries)}: {tries[-1]}")
            if result["code_name"] == "SUCCEEDED" and result["success"]:
                break
            print(graph.mission_log(30))
    finally:
        graph.set_mission(explore_waypoints=MISSION_YAML["explore_waypoints"],
                          look_around_yaws=MISSION_YAML["look_around_yaws"], floor_grasps=True,
                          support_looks=MISSION_YAML["support_looks"])
    assert result["code_name"] == "SUCCEEDED" and result["success"], \
        f"{tries}\n--- graph log ---\n{graph.mission_log()}"


def test_grasp_failed_after_every_retry(graph):
    # a lift takes ~3 s and must then hold 1 s: with 1 s per attempt every attempt fails, and the retries run
    graph.set_mission(max_grasp_attempts=2, grasp_timeout_s=1.0)
    try:
        layout = graph.harness.layout(1, HOME_MAP)
        result = graph.fetch(layout)
    finally:
        graph.set_mission(max_grasp_attempts=MISSION_YAML["max_grasp_attempts"],
                          grasp_timeout_s=MISSION_YAML["grasp_timeout_s"])
    assert result["code_name"] == "GRASP_FAILED", result
    assert result["grasp_attempts"] == 2 and "2 attempt(s)" in result["reason"]
    assert result["reason"].count("within 1 s") == 2


def test_no_robot_side_node_reads_simulator_truth(graph):
    probe = graph.probe
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

    # Called through the harness, which waits on the future: the module's spinner thread spins the
    # probe. (probe.call spins the same executor from this thread too, and two threads in one
    # executor broke its wait set: RCLError "wait set index ... out of bounds" in the spinner, CI.)
    client = graph.probe.node.create_client(EstimateGraspPose, "/grasp_pose/estimate")
    estimate = lambda request: graph.harness._call(client, request, timeout=30.0)  # noqa: E731
    req = EstimateGraspPose.Request(views=2)
    req.hint.header.frame_id = "base_link"
    req.hint.point.x, req.hint.point.z = 5.0, 0.5       # 5 m ahead, in the air: nothing there
    reply = estimate(req)
    assert not reply.ok and reply.reason.startswith(("TARGET_NOT_VISIBLE", "POSE_UNCERTAIN", "NO_FRAME")), reply.reason
    req.hint.point.x = float("nan")
    reply = estimate(req)
    assert not reply.ok and reply.reason.startswith("BAD_INPUT"), reply.reason
    req.hint.point.x, req.frame_id = 0.6, "no_such_frame"
    reply = estimate(req)
    assert not reply.ok and reply.reason.startswith("BAD_INPUT") and "no_such_frame" in reply.reason, reply.reason

