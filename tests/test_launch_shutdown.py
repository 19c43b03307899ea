"""Every shipped launch file's graph stops cleanly on Ctrl-C, in the middle of its work.

A user stops a graph with Ctrl-C under ``ros2 launch`` or the project's runner. The terminal
delivers SIGINT to the whole foreground process group, so each node gets its own SIGINT (and
``ros2 launch`` does not send another; it escalates to SIGTERM after ``sigterm_timeout``). The
runner, which puts each node in its own group, forwards the signal itself. These tests do what
the terminal does under ``ros2 launch`` -- SIGINT to the runner *and* to every node at once --
while the graph is busy (cameras rendering, a goal being driven, a fetch running, training),
and check that every node exits with code 0 and that nothing printed a traceback or a FATAL log.

Regressions these catch: the bridge died with ``[FATAL] Exception in 'timers'
callback`` from inside ``getCameraImage`` and then published on an invalid context; the
semantic map exited 1 with ``ValueError: Requested logging filters cannot be changed between
calls`` (``logger.warn`` with and without throttling shares one call site in rclpy).
"""

from __future__ import annotations

import ast
import json
import os
import re
import signal
from pathlib import Path
from typing import Callable, Dict

import pytest
from conftest import REPO
from geometry_msgs.msg import PoseStamped, Vector3
from sensor_msgs.msg import Image
from std_msgs.msg import Float64, String, UInt32

from rlstack_interfaces.msg import SemanticMap

LAUNCH = REPO / "launch"
#: what a clean log never contains (rclpy's executor, Python, and rcl errors on a dead context)
BAD_OUTPUT = ("Traceback", "[FATAL]", "Exception in", "context is invalid", "exited with code 1",
              "exited with code 2", "killed by", "still running after SIGINT")


def _children(runner) -> Dict[str, int]:
    """Node name -> pid, from the runner's 'started NAME (pid N)' lines."""
    return {name: int(pid) for name, pid in re.findall(r"started (\S+) \(pid (\d+)\)", runner.log_text())}


def _interrupt_like_a_terminal(runner) -> None:
    """SIGINT to the runner and to every node, as Ctrl-C does to a foreground process group."""
    targets = [runner.pid, *_children(runner).values()]
    for pid in targets:
        try:
            os.kill(pid, signal.SIGINT)
        except ProcessLookupError:
            pass


def _assert_clean_stop(runner, expected_nodes) -> None:
    code = runner.wait(timeout=60)
    log = runner.log_text()
    assert code == 0, f"runner exited {code}:\n{runner.tail(60)}"
    for name in expected_nodes:
        assert f"{name} exited with code 0" in log, f"{name} did not exit 0:\n{runner.tail(60)}"
    for bad in BAD_OUTPUT:
        assert bad not in log, f"'{bad}' in the graph's output:\n{runner.tail(80)}"


def _start(ros_processes, tmp_path, launch_file: str, **args):
    argv = [os.sys.executable, "-m", "rlstack_launch", str(LAUNCH / launch_file), "--grace", "10"]
    argv += [f"{k}:={v}" for k, v in args.items()]
    # cwd: the train node writes its run folder under out/ relative to it; keep that in tmp.
    return ros_processes.start(argv, name="runner", cwd=tmp_path)


def _wait_busy(ros_probe, runner, what: str, predicate: Callable[[], bool], timeout: float = 90.0) -> None:
    def ok() -> bool:
        if runner.returncode is not None:
            raise AssertionError(f"the graph stopped before it got busy ({what}):\n{runner.tail(60)}")
        return predicate()

    ros_probe.spin_until(ok, timeout=timeout, what=what)


def _received(ros_probe, topic: str, msg_type, count: int = 2, qos=10) -> Callable[[], bool]:
    queue = ros_probe.subscribe(topic, msg_type, qos)
    return lambda: len(queue) >= count


def test_smoke_graph(ros_processes, ros_probe, tmp_path):
    runner = _start(ros_processes, tmp_path, "smoke.launch.yaml")
    _wait_busy(ros_probe, runner, "round trips", _received(ros_probe, "/smoke/smoke_talker/round_trips", UInt32))
    _interrupt_like_a_terminal(runner)
    _assert_clean_stop(runner, ["smoke_talker", "smoke_map"])


def test_sigusr1_prints_every_nodes_stacks_and_the_graph_runs_on(ros_processes, ros_probe, tmp_path):
    """The stall report: SIGUSR1 to the runner makes every node print its threads' stacks (the
    fetch system test does this when a graph stops answering); nothing stops, and Ctrl-C still
    ends the graph cleanly afterwards."""
    runner = _start(ros_processes, tmp_path, "smoke.launch.yaml")
    round_trips = ros_probe.subscribe("/smoke/smoke_talker/round_trips", UInt32, 10)
    _wait_busy(ros_probe, runner, "round trips", lambda: len(round_trips) >= 2)
    runner.dump_stacks(settle_s=0.0)
    ros_probe.spin_until(lambda: runner.log_text().count("most recent call first") >= 2, 10.0,
                         "a stack dump from each of the two nodes")
    assert "spin_until_stopped" in runner.log_text()          # where an idle node waits: its spin loop
    seen = len(round_trips)
    _wait_busy(ros_probe, runner, "round trips after the dump", lambda: len(round_trips) >= seen + 2, timeout=20.0)
    _interrupt_like_a_terminal(runner)
    _assert_clean_stop(runner, ["smoke_talker", "smoke_map"])


def test_sim_graph_with_cameras_rendering(ros_processes, ros_probe, tmp_path):
    runner = _start(ros_processes, tmp_path, "sim.launch.yaml", scene="home")
    _wait_busy(ros_probe, runner, "camera frames", _received(ros_probe, "/head_camera/image_raw", Image, 3))
    _interrupt_like_a_terminal(runner)
    _assert_clean_stop(runner, ["sim_bridge"])


def test_perception_graph_while_mapping(ros_processes, ros_probe, tmp_path):
    runner = _start(ros_processes, tmp_path, "perception.launch.yaml")
    _wait_busy(ros_probe, runner, "semantic map updates", _received(ros_probe, "/semantic_map", SemanticMap, 2))
    _interrupt_like_a_terminal(runner)
    _assert_clean_stop(runner, ["sim_bridge", "semantic_map"])


def test_nav_graph_while_driving(ros_processes, ros_probe, tmp_path):
    import time

    from geometry_msgs.msg import Twist
    from nav_msgs.msg import Odometry

    runner = _start(ros_processes, tmp_path, "nav.launch.yaml")
    cmd = ros_probe.subscribe("/cmd_vel", Twist)
    odom = ros_probe.subscribe("/odom", Odometry)
    goal_pub = ros_probe.node.create_publisher(PoseStamped, "/goal_pose", 10)
    last_sent = [0.0]

    def driving() -> bool:
        # a goal once the bridge's odometry flows and nav listens (again every 5 s until it drives)
        if len(odom) and goal_pub.get_subscription_count() and time.monotonic() - last_sent[0] > 5.0:
            goal = PoseStamped()
            goal.header.frame_id = "map"
            goal.pose.position.x, goal.pose.position.y, goal.pose.orientation.w = 1.0, 0.0, 1.0
            goal_pub.publish(goal)
            last_sent[0] = time.monotonic()
        return any(abs(m.linear.x) > 1e-3 or abs(m.angular.z) > 1e-3 for m in list(cmd.messages))

    _wait_busy(ros_probe, runner, "the base driving to /goal_pose", driving)
    _interrupt_like_a_terminal(runner)
    _assert_clean_stop(runner, ["sim_bridge", "nav_controller"])


@pytest.mark.parametrize("launch_file,topic,msg_type", [
    ("policy_cartpole.launch.yaml", "/cartpole/force", Float64),
    ("policy_ball_plate.launch.yaml", "/ball_plate/angles", Vector3),
    ("policy_lift.launch.yaml", "/arm/ee_delta", Vector3),
], ids=["cartpole", "ball_plate", "lift"])
def test_policy_graphs_while_controlling(ros_processes, ros_probe, tmp_path, launch_file, topic, msg_type):
    runner = _start(ros_processes, tmp_path, launch_file)
    _wait_busy(ros_probe, runner, f"policy commands on {topic}", _received(ros_probe, topic, msg_type, 5))
    _interrupt_like_a_terminal(runner)
    _assert_clean_stop(runner, ["sim_bridge", "policy_node"])


def test_train_graph_while_training(ros_processes, ros_probe, tmp_path):
    runner = _start(ros_processes, tmp_path, "train_lockstep.launch.yaml", total_timesteps=100000)
    progress = ros_probe.subscribe("/train_node/progress", String)

    def training() -> bool:
        return any(json.loads(m.data).get("phase") == "training" for m in list(progress.messages))

    _wait_busy(ros_probe, runner, "training progress", training, timeout=120)
    _interrupt_like_a_terminal(runner)
    _assert_clean_stop(runner, ["sim_bridge", "train_node"])
    assert "interrupted" in runner.log_text()
    # the run folder keeps a resumable checkpoint of the model as it was
    from rlstack_learning.checkpoints import latest_checkpoint

    (run_dir,) = Path(tmp_path, "out", "train_ros", "cartpole").iterdir()
    assert latest_checkpoint(str(run_dir))[0] is not None, f"no checkpoint in {run_dir} after the interrupt"


def test_fetch_graph_during_a_fetch(ros_processes, ros_probe, tmp_path):
    from rclpy.action import ActionClient

    from rlstack_interfaces.action import Fetch

    runner = _start(ros_processes, tmp_path, "fetch.launch.yaml", seed=3)
    client = ActionClient(ros_probe.node, Fetch, "/fetch")
    feedback = []
    sent = []

    def fetching() -> bool:
        if not sent and client.server_is_ready():
            goal = Fetch.Goal(query="the yellow cube")
            goal.dropoff.header.frame_id = "map"
            goal.dropoff.pose.position.x, goal.dropoff.pose.orientation.w = -0.5, 1.0
            sent.append(client.send_goal_async(goal, feedback_callback=lambda m: feedback.append(m.feedback.phase)))
        return len(feedback) >= 2

    _wait_busy(ros_probe, runner, "fetch feedback", fetching, timeout=120)
    _interrupt_like_a_terminal(runner)
    _assert_clean_stop(runner, ["sim_bridge", "localizer", "semantic_map", "nav_controller", "policy_node", "mission"])
    client.destroy()


def test_no_logger_warn_calls():
    """``logger.warn`` is rclpy's deprecated alias: every call in a process shares one call site
    (the deprecation wrapper), so one throttled and one plain ``warn`` anywhere raise ValueError
    ("Requested logging filters cannot be changed between calls"). Use ``warning``."""
    offenders = []
    for path in list((REPO / "ros2_ws" / "src").rglob("*.py")) + list((REPO / "sim_bridges").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "warn"
                    and not (isinstance(node.func.value, ast.Name) and node.func.value.id in ("warnings", "ctx"))):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not offenders, "use get_logger().warning(...), not warn(...): " + ", ".join(offenders)
