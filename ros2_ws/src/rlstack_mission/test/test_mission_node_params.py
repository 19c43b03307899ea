"""The mission node's start-up checks, as a real process on a private domain."""

from pathlib import Path

PARAMS = Path(__file__).resolve().parents[4] / "launch" / "params" / "mission.yaml"


def test_the_ground_truth_grasp_source_is_refused_with_where_it_went(ros_processes):
    """The mission is a robot-side node: it reads no simulator truth. The old ``ground_truth`` source
    stops the node at start with one line naming the replacement (topic + the simulator-side node)."""
    proc = ros_processes.start_node("rlstack_mission", "mission", params_file=PARAMS,
                                    params={"grasp_target_source": "ground_truth"})
    assert proc.wait(timeout=30.0) == 2
    log = proc.log_text()
    assert "ground_truth_grasp_target" in log and "robot_mode:=false" in log
    assert "Traceback" not in log


def test_an_unknown_grasp_source_is_refused(ros_processes):
    proc = ros_processes.start_node("rlstack_mission", "mission", params_file=PARAMS,
                                    params={"grasp_target_source": "camera"})
    assert proc.wait(timeout=30.0) == 2
    assert "must be perception or topic, got 'camera'" in proc.log_text()
