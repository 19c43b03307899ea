"""The smoke graph started through the project's runner, as `make` and users start graphs."""

import os
import re
import signal
import time
from pathlib import Path

from conftest import REPO
from std_msgs.msg import UInt32

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


def _own_fastdds_segments(pid: int) -> set:
    """The Fast DDS segments process ``pid`` owns: those whose ``_el`` lock file it holds (/proc/locks)."""
    inodes = set()
    with open("/proc/locks") as f:
        for line in f:
            fields = line.split()
            if "FLOCK" in fields and str(pid) in fields:
                inodes.add(int(fields[fields.index(str(pid)) + 1].rsplit(":", 1)[1]))
    return {str(p)[:-3] for p in Path("/dev/shm").glob("fastdds_*_el")
            if re.fullmatch(r"fastdds_[0-9a-z]{16}_el", p.name) and _inode(p) in inodes}


def _inode(path) -> int:
    try:
        return os.stat(path).st_ino
    except OSError:
        return -1


def test_runner_removes_the_shared_memory_a_killed_node_left(ros_processes, ros_probe):
    """A SIGKILLed node cannot remove its Fast DDS segment (~17 MB of RAM in /dev/shm); the runner
    does, and leaves the living processes' segments alone."""
    runner = ros_processes.start_graph(SMOKE)
    ros_probe.wait_for_node("smoke_talker", "/smoke", timeout=30)
    talker_pid = _child_pid(runner, "smoke_talker")
    ours = _own_fastdds_segments(os.getpid())   # this test's probe: alive throughout
    assert ours, "the probe owns no Fast DDS segment: is the SHM-only profile in use?"
    ros_probe.spin_until(lambda: _own_fastdds_segments(talker_pid), timeout=10, what="the talker's own segment")
    time.sleep(2.5)   # older than the cleanup's min_age_s: not a participant still being created
    talkers = _own_fastdds_segments(talker_pid)
    os.kill(talker_pid, signal.SIGKILL)
    assert runner.wait(timeout=30) != 0   # a required node: the graph stops
    log = runner.log_text()
    assert re.search(r"smoke_talker left shared memory behind: removed [1-9]\d* segment", log), runner.tail()
    assert talkers and not any(os.path.exists(path) for path in talkers)   # the killed talker's: gone
    assert all(os.path.exists(path) for path in ours)                        # the living probe's: kept
