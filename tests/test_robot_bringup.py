"""The robot bring-up (launch/robot.launch.yaml) against the simulator bridge on wall-clock time, as
on a robot: two launches, as the simulator and the robot's computer are started apart. The bridge
stamps from the system clock and publishes no /clock; the robot graph runs with its defaults'
use_sim_time false and the simulator's topic names. One fetch must succeed (judged from the
simulator's ground truth), /robot_description is there for rviz2, and nothing follows /clock.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from std_msgs.msg import String

from rlstack_common.background_spin import BackgroundSpin
from rlstack_mission.graph import wait_until_ready
from rlstack_mission.harness import FetchHarness
from rlstack_testing.domain import lease_domain_id
from rlstack_testing.probe import RosProbe
from rlstack_testing.processes import ProcessGroup

REPO = Path(__file__).resolve().parents[1]
HOME_MAP = str(REPO / "maps" / "home.yaml")
#: the simulator as fetch.launch.yaml starts it, on the wall clock
SIM_ARGS = {"scene": "home", "seed": 5, "mode": "realtime", "ground_truth_rate_hz": 20.0, "camera_rate_hz": 10.0,
            "continuous_clock": "true", "wall_clock": "true", "depth_noise": "true", "wheel_odometry": "true",
            "odom_gyro": "true"}
#: the robot graph on the simulator's topics; the simulator takes the commands directly (no adapters)
# and publishes every link's transform itself
ROBOT_ARGS = {"rgb_topic": "/head_camera/image_raw", "depth_topic": "/head_camera/depth/image_raw",
              "nav_depth_topic": "/head_camera/depth/image_raw", "camera_info_topic": "/head_camera/camera_info",
              "odom_topic": "/odom", "adapters": "false", "state_publisher_tf": "false"}


@pytest.fixture(scope="module")
def robot_graph(tmp_path_factory):
    lease = lease_domain_id()
    processes = ProcessGroup(lease.domain_id, tmp_path_factory.mktemp("robot-bringup-logs"))
    probe = RosProbe(lease.domain_id, name="robot_bringup_test")
    spin = BackgroundSpin(probe.executor, name="robot-bringup-spin")
    try:
        processes.start_graph(REPO / "launch" / "sim.launch.yaml", SIM_ARGS, name="simulator", grace=10.0)
        robot = processes.start_graph(REPO / "launch" / "robot.launch.yaml", ROBOT_ARGS, name="robot", grace=10.0)
        wait_until_ready(probe.node, lambda: all(p.alive() for p in processes.processes), timeout_s=150.0,
                         log_hint=robot.name)
        yield probe, processes
    finally:
        processes.stop_all(grace=10.0)
        spin.stop()
        probe.close()
        lease.release()


def test_the_robot_graph_runs_on_the_wall_clock_with_its_model_for_rviz(robot_graph):
    probe, _ = robot_graph
    node = probe.node
    assert node.count_publishers("/clock") == 0
    for name in ("localizer", "semantic_map", "grasp_pose", "nav_controller", "policy_node", "mission"):
        topics = [t for t, _ in node.get_subscriber_names_and_types_by_node(name, "/")]
        assert "/clock" not in topics, f"{name} follows /clock: use_sim_time must be false on a robot"
    from rlstack_description.state_publisher import DESCRIPTION_QOS

    got = []
    node.create_subscription(String, "/robot_description", got.append, DESCRIPTION_QOS)
    deadline = time.monotonic() + 20.0   # the probe is spun in the background: poll, never spin here
    while not got and time.monotonic() < deadline:
        time.sleep(0.1)
    assert got, "no /robot_description within 20 s (transient local: a late subscriber gets it)"
    assert "<robot" in got[0].data and "panda_hand" in got[0].data


def test_one_fetch_succeeds_on_the_wall_clock(robot_graph):
    probe, processes = robot_graph
    harness = FetchHarness(probe.node)
    layout = harness.layout(1, HOME_MAP)   # the green cube on table_3
    harness.apply(layout)
    result = harness.fetch(layout, 360.0)
    processes.assert_all_alive()
    robot = processes.processes[1]
    assert result["code_name"] == "SUCCEEDED" and result["success"], (
        f"{result}\n--- robot graph log ---\n{robot.tail(150)}")
