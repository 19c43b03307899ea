"""The harness tested with real node processes (echo_node) on private domains."""

import os
import time

import pytest
from std_msgs.msg import String
from std_srvs.srv import Trigger

from rlstack_testing import ProcessGroup, lease_domain_id, resolve_executable


def test_domain_leases_are_exclusive():
    with lease_domain_id() as a, lease_domain_id() as b:
        assert a.domain_id != b.domain_id
        assert 1 <= a.domain_id <= 101 and 1 <= b.domain_id <= 101
    # Released leases can be taken again.
    with lease_domain_id() as c:
        assert 1 <= c.domain_id <= 101


def test_missing_package_and_executable_are_explained():
    with pytest.raises(FileNotFoundError, match="not in the ament index"):
        resolve_executable("no_such_package_xyz", "node")
    with pytest.raises(FileNotFoundError, match="has no executable"):
        resolve_executable("rlstack_testing", "no_such_exe")


def test_round_trip_between_processes(ros_processes, ros_probe):
    node = ros_processes.start_node("rlstack_testing", "echo_node", params={"prefix": "got-"})
    replies = ros_probe.subscribe("/out", String)
    pub = ros_probe.publisher("/in", String)          # waits until echo_node subscribed
    ros_probe.wait_for_publishers("/out")
    pub.publish(String(data="hello"))
    [reply] = ros_probe.wait_for_messages(replies, 1, timeout=10)
    assert reply.data == "got-hello"
    response = ros_probe.call(Trigger, "/echo_node/ping", Trigger.Request())
    assert response.success and response.message == "1"
    assert node.alive()


def test_collect_times_out_with_a_clear_message(ros_probe):
    with pytest.raises(TimeoutError, match="publisher"):
        ros_probe.collect("/nobody_publishes_here", String, count=1, timeout=0.5)


def test_a_released_domain_is_the_last_to_be_leased_again(tmp_path, monkeypatch):
    """A stray node of the last test must not appear in the next one: ids rotate, least recently
    leased first, and a just-released id comes back only after all the others."""
    monkeypatch.setenv("RLSTACK_DOMAIN_LOCK_DIR", str(tmp_path))
    seen = []
    for _ in range(101):
        with lease_domain_id() as lease:
            seen.append(lease.domain_id)
    assert sorted(seen) == list(range(1, 102))       # every id once before any repeats
    with lease_domain_id() as lease:
        assert lease.domain_id == seen[0]             # then the one leased longest ago


def test_domains_are_isolated(ros_processes, ros_probe):
    """A node on another domain is invisible to this test's probe."""
    with lease_domain_id() as other, ProcessGroup(other.domain_id, ros_processes.log_dir / "other") as group:
        group.start_node("rlstack_testing", "echo_node")
        ros_processes.start_node("rlstack_testing", "echo_node", name="mine")
        ros_probe.wait_for_node("mine")
        ros_probe.spin_for(1.0)
        names = [n for n, _ in ros_probe.node.get_node_names_and_namespaces()]
        assert "echo_node" not in names


def test_stop_escalates_when_sigint_is_ignored(ros_processes):
    node = ros_processes.start_node("rlstack_testing", "echo_node", params={"ignore_sigint": True})
    node.wait_for_output("echo_node ready", timeout=15)
    t0 = time.monotonic()
    code = node.stop(grace=0.5)
    assert not node.alive()
    assert code != 0                      # ended by SIGTERM/SIGKILL, not by itself
    assert time.monotonic() - t0 < 10


def test_missing_middleware_settings_refuse_to_start(monkeypatch, tmp_path):
    monkeypatch.delenv("FASTDDS_DEFAULT_PROFILES_FILE", raising=False)
    with lease_domain_id() as lease, ProcessGroup(lease.domain_id, tmp_path) as group:
        with pytest.raises(RuntimeError, match="middleware settings missing"):
            group.start_node("rlstack_testing", "echo_node")


def test_no_process_survives_its_group(tmp_path):
    with lease_domain_id() as lease:
        with ProcessGroup(lease.domain_id, tmp_path) as group:
            procs = [group.start_node("rlstack_testing", "echo_node", name=f"e{i}") for i in range(2)]
        for proc in procs:
            assert not proc.alive()
            with pytest.raises(ProcessLookupError):
                os.kill(proc.pid, 0)


def test_a_grandchild_in_its_own_group_is_stopped_with_its_parent(tmp_path):
    """What the runner does to its nodes: each in a process group of its own. A node that ignores
    SIGTERM once outlived a failed test and drove the robot of the next graph; stop() kills it too."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import os, signal, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); signal.signal(signal.SIGINT, signal.SIG_IGN); "
        "time.sleep(600)'], preexec_fn=lambda: os.setpgid(0, 0))\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(600)\n")
    with lease_domain_id() as lease:
        group = ProcessGroup(lease.domain_id, tmp_path)
        parent = group.start([os.sys.executable, str(script)], name="parent")
        deadline = time.monotonic() + 20
        while not parent.log_text().strip() and time.monotonic() < deadline:
            time.sleep(0.05)
        grandchild = int(parent.log_text().split()[0])
        os.kill(grandchild, 0)          # running, in a group of its own
        assert os.getpgid(grandchild) != os.getpgid(parent.pid)
        group.stop_all(grace=1.0)
    # gone, or a zombie that init has not reaped yet (it runs no more)
    try:
        state = open(f"/proc/{grandchild}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        state = "gone"
    assert state in ("gone", "Z"), state
