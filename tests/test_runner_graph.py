"""The smoke graph started through the project's runner, as `make` and users start graphs."""

import os
import re
import signal

from std_msgs.msg import UInt32

from conftest import REPO
from rlstack_interfaces.srv import QueryObjects

SMOKE = REPO / "launch" / "smoke.launch.yaml"


def test_runner_starts_graph_and_stops_cleanly_on_sigint(ros_processes, ros_probe):
    runner = ros_processes.start_graph(SMOKE, {"label": "blue ball"})
    trips = ros_probe.collect("/smoke/smoke_talker/round_trips", UInt32, count=2, timeout=30)
    assert trips[1].data == trips[0].data + 1
    reply = ros_probe.call(QueryObjects, "/smoke/query_objects", QueryObjects.Request(text="blue ball"))
    assert [m.object.label for m in reply.matches] == ["blue ball"]

    runner.send_signal(signal.SIGINT)
    assert runner.wait(timeout=30) == 0
    log = runner.log_text()
    # Every line of a node is prefixed with its name.
    assert "[smoke_map] " in log and "[smoke_talker] " in log


def test_runner_fails_when_a_required_node_dies(ros_processes, ros_probe):
    runner = ros_processes.start_graph(SMOKE)
    ros_probe.wait_for_node("smoke_talker", "/smoke", timeout=30)
    talker_pid = _child_pid(runner, "smoke_talker")
    os.kill(talker_pid, signal.SIGKILL)
    assert runner.wait(timeout=30) != 0
    ros_probe.spin_until(lambda: ("smoke_map", "/smoke") not in ros_probe.node.get_node_names_and_namespaces(),
                         timeout=15, what="smoke_map to be stopped by the runner")


def _child_pid(runner, name: str) -> int:
    """The pid of the runner's child ``name``, from the runner's 'started NAME (pid N)' line."""
    match = re.search(rf"started {name} \(pid (\d+)\)", runner.log_text())
    assert match, f"runner did not report starting {name}:\n{runner.tail()}"
    return int(match.group(1))
