"""Supervising real processes: output, signals, required nodes, escalation, cleanup."""

from __future__ import annotations

import json
import os
import signal
import time

from conftest import alive, wait_for

from rlstack_launch import load_launch_file, run_graph


def graph(*nodes: str) -> str:
    """A launch file whose entries are the given ``node`` flow mappings."""
    return "launch:\n" + "".join(f"  - node: {{pkg: demo, exec: fake_node, {n}}}\n" for n in nodes)


def wait_ready(prefix, *names: str) -> None:
    for name in names:
        wait_for(lambda: prefix.has(name, "pid"), what=f"node {name} to be ready")


def test_prefixed_output_and_sigint_reaches_every_child(prefix, cli):
    path = prefix.launch(graph(
        "name: alpha, args: '--x 1'",
        "name: beta, on_exit: shutdown",
        "name: gamma, namespace: ns",
    ))
    runner = cli(str(path))
    wait_ready(prefix, "alpha", "beta", "gamma")
    pids = [prefix.pid_of(n) for n in ("alpha", "beta", "gamma")]
    runner.send_signal(signal.SIGINT)
    out, err = runner.communicate(timeout=10)
    assert runner.returncode == 0, err
    for name in ("alpha", "beta", "gamma"):
        assert prefix.has(name, "sigint")
        assert f"[{name}] got SIGINT\n" in out
        assert f"[{name}] hello on stderr\n" in err
        assert f"[rlstack_launch] started {name} (pid " in err
        assert f"[rlstack_launch] {name} exited with code 0" in err
    # Whole lines, each with exactly one prefix.
    for line in out.splitlines():
        assert line.split("] ", 1)[0] in ("[alpha", "[beta", "[gamma"), line
        assert line.count("ARGV") <= 1
    argv_line = next(ln for ln in out.splitlines() if ln.startswith("[alpha] ARGV "))
    assert json.loads(argv_line[len("[alpha] ARGV "):]) == [
        "--x", "1", "--ros-args", "-r", "__node:=alpha"]
    assert "received SIGINT, stopping all nodes" in err
    assert not any(alive(pid) for pid in pids)


def test_required_node_failure_stops_the_graph(prefix, cli):
    path = prefix.launch(graph(
        "name: worker",
        "name: boss, on_exit: shutdown, args: '--after 0.3 --exit 3'",
    ))
    runner = cli(str(path))
    out, err = runner.communicate(timeout=10)
    assert runner.returncode == 1, err
    assert "[rlstack_launch] boss exited with code 3; it is required, stopping the graph" in err
    assert prefix.has("worker", "sigint")
    assert "[worker] got SIGINT" in out
    assert not alive(prefix.pid_of("worker"))


def test_required_node_clean_exit_stops_the_graph_with_0(prefix, cli):
    path = prefix.launch(graph(
        "name: worker",
        "name: boss, on_exit: shutdown, args: '--after 0.2'",
    ))
    runner = cli(str(path))
    out, err = runner.communicate(timeout=10)
    assert runner.returncode == 0, err
    assert "boss exited with code 0; it is required, stopping the graph" in err
    assert prefix.has("worker", "sigint")


def test_required_node_killed_by_foreign_signal_fails(prefix, cli):
    path = prefix.launch(graph("name: worker", "name: boss, on_exit: shutdown"))
    runner = cli(str(path))
    wait_ready(prefix, "worker", "boss")
    os.kill(prefix.pid_of("boss"), signal.SIGKILL)  # not sent by the runner
    _out, err = runner.communicate(timeout=10)
    assert runner.returncode == 1, err
    assert "boss killed by SIGKILL; it is required" in err
    assert prefix.has("worker", "sigint")


def test_non_required_death_does_not_stop_the_graph(prefix, cli):
    path = prefix.launch(graph(
        "name: flaky, args: '--after 0.1 --exit 5'",
        "name: steady, on_exit: shutdown, args: '--after 1.5'",
    ))
    runner = cli(str(path))
    out, err = runner.communicate(timeout=10)
    # steady ran to its own end: nobody interrupted it when flaky died.
    assert runner.returncode == 0, err
    assert "[steady] finished" in out
    assert not prefix.has("steady", "sigint")
    assert "flaky exited with code 5 (not required; the graph goes on)" in err
    assert err.index("flaky exited with code 5") < err.index("steady exited with code 0")


def test_graph_that_ends_by_itself(prefix, cli):
    ok = prefix.launch(graph("name: a, args: '--after 0.1'", "name: b, args: '--after 0.2'"))
    result = cli.run(str(ok))
    assert result.returncode == 0, result.stderr
    bad = prefix.launch(
        graph("name: c, args: '--after 0.1 --exit 2'", "name: d, args: '--after 0.2'"),
        name="bad.launch.yaml",
    )
    result = cli.run(str(bad))
    assert result.returncode == 1, result.stderr


def test_stubborn_children_get_sigterm_then_sigkill(prefix, cli):
    path = prefix.launch(graph(
        "name: deaf, args: '--ignore-int --ignore-term'",
        "name: half_deaf, args: '--ignore-int'",
        "name: polite",
    ))
    runner = cli(str(path), "--grace", "0.5")
    wait_ready(prefix, "deaf", "half_deaf", "polite")
    pids = [prefix.pid_of(n) for n in ("deaf", "half_deaf", "polite")]
    started = time.monotonic()
    runner.send_signal(signal.SIGINT)
    out, err = runner.communicate(timeout=10)
    elapsed = time.monotonic() - started
    assert runner.returncode == 0, err
    assert elapsed < 5, elapsed
    assert "still running after SIGINT: deaf, half_deaf; sending SIGTERM" in err
    assert "still running after SIGTERM: deaf; sending SIGKILL" in err
    assert prefix.has("half_deaf", "sigterm") and "half_deaf exited with code 143" in err
    assert prefix.has("deaf", "sigterm") and "deaf killed by SIGKILL" in err
    assert "[polite] got SIGINT" in out
    assert not any(alive(pid) for pid in pids)


def test_second_sigint_escalates_at_once(prefix, cli):
    path = prefix.launch(graph("name: deaf, args: '--ignore-int'"))
    runner = cli(str(path), "--grace", "30")
    wait_ready(prefix, "deaf")
    runner.send_signal(signal.SIGINT)
    wait_for(lambda: prefix.has("deaf", "sigint"), what="the first SIGINT to arrive")
    runner.send_signal(signal.SIGINT)
    _out, err = runner.communicate(timeout=10)
    assert runner.returncode == 0, err
    assert prefix.has("deaf", "sigterm")


def test_helpers_spawned_by_a_node_are_stopped(prefix, cli):
    path = prefix.launch(graph("name: parent, args: '--grandchild'"))
    runner = cli(str(path))
    wait_ready(prefix, "parent")
    helper = int((prefix.state / "parent.grandchild").read_text())
    assert alive(helper)
    runner.send_signal(signal.SIGTERM)
    runner.communicate(timeout=10)
    assert runner.returncode == 0
    wait_for(lambda: not alive(helper), timeout=3, what="the helper process to be gone")


def test_runner_killed_hard_takes_children_along(prefix, cli):
    path = prefix.launch(graph("name: orphan_candidate"))
    runner = cli(str(path))
    wait_ready(prefix, "orphan_candidate")
    pid = prefix.pid_of("orphan_candidate")
    runner.kill()  # SIGKILL: the runner gets no chance to clean up
    runner.communicate(timeout=10)
    wait_for(lambda: not alive(pid), timeout=5, what="the node to die with its runner")


def test_run_graph_api_in_process(prefix, capfd):
    path = prefix.launch(graph(
        "name: quick, args: '--after 0.1'", "name: quick2, args: '--after 0.1'"
    ))
    specs = load_launch_file(str(path))
    # Whatever the handlers were before (a background job starts with SIGINT ignored).
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert run_graph(specs, grace=1.0) == 0
    out, err = capfd.readouterr()
    assert "[quick] finished" in out and "[quick2] finished" in out
    assert "[rlstack_launch] quick exited with code 0" in err
    # The handlers the runner installed are gone again.
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_respawned_node_is_started_again_and_stops_with_the_graph(prefix, cli):
    """``respawn: "true"`` (as ros2 launch): a node that exits, with any code, is started again
    after ``respawn_delay``; Ctrl-C then stops every node and the exit status is 0."""
    path = prefix.launch(
        "launch:\n"
        "  - node: {pkg: demo, exec: fake_node, name: steady}\n"
        "  - node: {pkg: demo, exec: fake_node, name: flaky, args: '--after 0.2 --exit 3',"
        " respawn: 'true', respawn_delay: 0.3}\n"
    )
    runner = cli(str(path))
    wait_ready(prefix, "steady")
    # The runner's stderr is read at the end; count the starts of 'flaky' through its pid
    # file instead: each start writes a new pid.
    seen = set()

    def two_new_pids() -> bool:
        if prefix.has("flaky", "pid"):
            seen.add(prefix.pid_of("flaky"))
        return len(seen) >= 3

    wait_for(two_new_pids, timeout=15, what="flaky to be started three times")
    runner.send_signal(signal.SIGINT)
    out, err = runner.communicate(timeout=15)
    assert runner.returncode == 0, err
    assert "[rlstack_launch] flaky exited with code 3; respawning it in 0.3 s (respawn 1)" in err
    assert "[rlstack_launch] respawned flaky (pid " in err
    assert "(respawn 2)" in err
    assert prefix.has("steady", "sigint")
    assert not alive(prefix.pid_of("steady"))
    assert all(not alive(pid) for pid in seen)


def test_a_pending_respawn_is_dropped_when_the_graph_stops(prefix, cli):
    path = prefix.launch(
        "launch:\n"
        "  - node: {pkg: demo, exec: fake_node, name: boss, on_exit: shutdown, args: '--after 0.8'}\n"
        "  - node: {pkg: demo, exec: fake_node, name: flaky, args: '--after 0.1 --exit 1',"
        " respawn: 'true', respawn_delay: 30.0}\n"
    )
    runner = cli(str(path))
    out, err = runner.communicate(timeout=15)
    assert runner.returncode == 0, err   # the required node exited 0; the respawned one failed
    assert "flaky exited with code 1; respawning it in 30 s (respawn 1)" in err
    assert "flaky will not be respawned: the graph is stopping" in err
    assert "respawned flaky" not in err


def test_respawn_attributes_are_checked(prefix):
    """respawn is a string read as a bool when the node starts (ExecuteProcess.parse, then
    ExecuteLocal.prepare's perform_typed_substitution); respawn_delay a YAML float >= 0."""
    from rlstack_launch import check_launch_file

    path = prefix.launch(
        "launch:\n"
        "  - arg: {name: again, default: 'true'}\n"
        "  - node: {pkg: demo, exec: fake_node, name: a, respawn: '$(var again)', respawn_delay: 2.5}\n"
        "  - node: {pkg: demo, exec: fake_node, name: b, respawn: 'true', on_exit: shutdown}\n"
        "  - node: {pkg: demo, exec: fake_node, name: c, respawn: 'sometimes'}\n"
        "  - node: {pkg: demo, exec: fake_node, name: d, respawn: 'yes', respawn_delay: -1.0}\n"
        "  - node: {pkg: demo, exec: fake_node, name: e, respawn_delay: 'soon'}\n"
    )
    problems = check_launch_file(str(path), {})
    assert len(problems) == 4, problems
    assert "node 'b'" in problems[0] and "contradict each other" in problems[0]
    assert "node 'c'" in problems[1] and "Cannot convert value 'sometimes' to '<class 'bool'>'" in problems[1]
    assert "node 'd'" in problems[2] and (
        "Attribute respawn_delay of Entity node expected to be a non-negative value but got `-1.0`"
        in problems[2])
    assert "node 'e'" in problems[3] and (
        "TypeError: '<' not supported between instances of 'str' and 'float'" in problems[3])
    specs = load_launch_file(str(path.parent / prefix.launch(
        "launch:\n"
        "  - arg: {name: again, default: 'true'}\n"
        "  - node: {pkg: demo, exec: fake_node, name: a, respawn: '$(var again)', respawn_delay: 2.5}\n"
        "  - node: {pkg: demo, exec: fake_node, name: z}\n"
        "  - node: {pkg: demo, exec: fake_node, name: y, respawn: 'On'}\n", name="ok.launch.yaml")),
        {"again": "1"})
    assert (specs[0].respawn, specs[0].respawn_delay) == (True, 2.5)
    assert (specs[1].respawn, specs[1].respawn_delay) == (False, 0.0)
    assert specs[2].respawn is True
