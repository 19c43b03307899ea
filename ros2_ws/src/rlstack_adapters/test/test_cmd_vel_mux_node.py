"""cmd_vel_mux as a real process on a private domain: priority, idle stop, lock, bad configuration."""

from pathlib import Path

from geometry_msgs.msg import Twist, Vector3
from std_msgs.msg import Bool

ROOT = Path(__file__).resolve().parents[4]
PARAMS = ROOT / "launch" / "params" / "cmd_vel_mux.yaml"


def twist(vx: float) -> Twist:
    return Twist(linear=Vector3(x=vx))


def test_the_mission_masks_navigation_then_one_zero_and_the_lock_stops_navigation(ros_processes, ros_probe):
    node = ros_processes.start_node("rlstack_adapters", "cmd_vel_mux", params_file=PARAMS,
                                    params={"lock_topic": "/pause", "lock_priority": 15})
    node.wait_for_output("-> /cmd_vel")
    out = ros_probe.subscribe("/cmd_vel", Twist)
    ros_probe.wait_for_publishers("/cmd_vel")
    nav = ros_probe.publisher("/cmd_vel_nav", Twist)
    mission = ros_probe.publisher("/cmd_vel_mission", Twist)
    pause = ros_probe.publisher("/pause", Bool)

    nav.publish(twist(0.3))
    assert ros_probe.wait_for_messages(out, 1)[0].linear.x == 0.3
    mission.publish(twist(0.12))
    assert ros_probe.wait_for_messages(out, 2)[1].linear.x == 0.12
    nav.publish(twist(0.3))                          # masked: the mission is fresh
    mission.publish(twist(0.11))
    msgs = ros_probe.wait_for_messages(out, 3)
    assert [m.linear.x for m in msgs[:3]] == [0.3, 0.12, 0.11]
    # Both inputs go quiet: after the 0.5 s timeout exactly one zero command, then silence.
    msgs = ros_probe.wait_for_messages(out, 4, timeout=5.0)
    assert msgs[3].linear.x == 0.0
    ros_probe.spin_for(1.0)
    assert len(out.pop_all()) == 4

    # The lock (priority 15) masks navigation (10) with one zero command; the mission (20) still drives.
    nav.publish(twist(0.2))
    assert ros_probe.wait_for_messages(out, 1)[0].linear.x == 0.2
    pause.publish(Bool(data=True))
    assert ros_probe.wait_for_messages(out, 2)[1].linear.x == 0.0
    nav.publish(twist(0.2))
    mission.publish(twist(0.05))
    assert ros_probe.wait_for_messages(out, 3)[2].linear.x == 0.05
    assert node.alive()


def test_inputs_of_unequal_length_stop_the_node_with_one_line(ros_processes):
    node = ros_processes.start_node("rlstack_adapters", "cmd_vel_mux", params_file=PARAMS,
                                    params={"input_priorities": [20]})
    assert node.wait(timeout=30) == 2
    assert "input_priorities has 1 entries, input_names has 2" in node.log_text()
