"""The command line, run as a real subprocess: errors are one line and exit 2."""

from __future__ import annotations

import shlex

import pytest

GOOD = """\
launch:
  - arg: {name: rate_hz, default: "10.0"}
  - node:
      pkg: demo
      exec: fake_node
      name: talker
      on_exit: shutdown
      param:
        - {from: "$(find-pkg-share demo)/params/good.yaml"}
        - {name: rate_hz, value: "$(var rate_hz)"}
      remap:
        - {from: objects, to: /smoke/objects}
  - node: {pkg: demo, exec: fake_node, name: listener, namespace: ns}
"""


def node(extra: str) -> str:
    """A launch file with one node whose mapping ends with ``extra``."""
    return "launch:\n  - node: {pkg: demo, exec: fake_node, name: n%s}\n" % extra


def assert_user_error(result, *expected: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines, "no error printed"
    for line in lines:
        assert line.startswith("rlstack_launch: error: "), line
    for text in expected:
        assert text in result.stderr, (text, result.stderr)


BAD_INPUTS = {
    "unknown tag": ("launch:\n  - nod: {pkg: demo}\n", [], ["tag 'nod' is unknown"]),
    "unsupported tag": (
        "launch:\n  - executable: {cmd: ls}\n", [], ["tag 'executable' is not supported"]
    ),
    "unknown key": (node(", launch-prefix: 'gdb'"), [], ["unknown key 'launch-prefix' in node"]),
    "unknown substitution": (
        node(", args: '$(eval 1+1)'"), [], ["substitution '$(eval ...)' is not supported"]
    ),
    "unset env": (
        node(", args: '$(env RLSTACK_SURELY_UNSET)'"), [],
        ["environment variable 'RLSTACK_SURELY_UNSET' is not set"],
    ),
    "missing package": (
        "launch:\n  - node: {pkg: nope_pkg, exec: fake_node}\n", [],
        ["package 'nope_pkg' not found in the ament index"],
    ),
    "missing executable": (
        "launch:\n  - node: {pkg: demo, exec: nope}\n", [],
        ["executable 'nope' not found in package 'demo'"],
    ),
    "not executable": (
        "launch:\n  - node: {pkg: demo, exec: not_executable}\n", [], ["is not executable"]
    ),
    "missing params file": (
        node(", param: [{from: '$(dirname)/missing.yaml'}]"), [],
        ["missing.yaml does not exist"],
    ),
    "params yaml syntax": (
        node(", param: [{from: '$(dirname)/syntax.yaml'}]"), [],
        ["syntax.yaml is not valid YAML", "at line 3, column 1"],
    ),
    "params without ros__parameters": (
        node(", param: [{from: '$(dirname)/noros.yaml'}]"), [],
        ["noros.yaml: entry 'talker' has no 'ros__parameters' mapping"],
    ),
    "params not a mapping": (
        node(", param: [{from: '$(dirname)/list.yaml'}]"), [],
        ["list.yaml must be a mapping of node names"],
    ),
    "missing required arg": (
        "launch:\n  - arg: {name: robot}\n", [],
        ["required launch argument 'robot' was not given (pass robot:=VALUE"],
    ),
    "unquoted default": (
        "launch:\n  - arg: {name: rate, default: 10.0}\n", [],
        ["Attribute 'default' of Entity 'arg' expected to be of type '<class 'str'>', "
         "got '<class 'float'>'", 'quote it: default: "10.0"'],
    ),
    "boolean respawn": (
        node(", respawn: true"), [],
        ["Attribute 'respawn' of Entity 'node' expected to be of type '<class 'str'>', "
         "got '<class 'bool'>'", 'quote it: respawn: "true"'],
    ),
    "launch yaml syntax": ("launch:\n  - node: {pkg: demo\n", [], ["is not valid YAML"]),
    "not a launch file": ("nodes: []\n", [], ["must be a mapping with the single key 'launch'"]),
    "bad on_exit": (node(", on_exit: restart"), [], ["on_exit 'restart' is not supported"]),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_one_line_error(prefix, cli, case):
    text, extra_args, expected = BAD_INPUTS[case]
    prefix.write("syntax.yaml", "talker:\n  ros__parameters: {a: [1,\n")
    prefix.write("noros.yaml", "talker:\n  rate_hz: 3\n")
    prefix.write("list.yaml", "- talker\n")
    path = prefix.launch(text)
    result = cli.run(str(path), *extra_args)
    assert_user_error(result, str(path), *expected)
    assert not prefix.recorded_pids(), "nothing may be started on a bad file"
    # --check reports the same problems the same way.
    assert_user_error(cli.run(str(path), *extra_args, "--check"), *expected)


@pytest.mark.parametrize(
    "args, expected",
    [
        ([], "the following arguments are required"),
        (["nope.launch.yaml"], "launch file nope.launch.yaml does not exist"),
        (["graph.launch.py"], "only YAML launch files are supported"),
        (["x.launch.yaml", "--grace", "-1"], "--grace must be >= 0"),
        (["x.launch.yaml", "--bogus"], "unrecognized arguments: --bogus"),
        (["demo", "missing.launch.yaml"], "no file named 'missing.launch.yaml'"),
        (["a:=1", "x.launch.yaml"], "comes after the launch arguments"),
    ],
)
def test_usage_errors_are_one_line(cli, args, expected):
    assert_user_error(cli.run(*args), expected)


def test_check_reports_every_problem(prefix, cli):
    path = prefix.launch(
        """\
        launch:
          - node: {pkg: demo, exec: nope, name: a}
          - node: {pkg: nope_pkg, exec: x, name: b}
          - bogus: {}
        """
    )
    result = cli.run(str(path), "--check")
    assert_user_error(result)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 3, lines
    assert f"{path}:2: node 'a'" in lines[0]
    assert f"{path}:3: node 'b'" in lines[1]
    assert f"{path}:4: " in lines[2]


def test_check_good_file(prefix, cli):
    path = prefix.launch(GOOD)
    result = cli.run(str(path), "--check", "rate_hz:=3")
    assert result.returncode == 0, result.stderr
    assert "ok:" in result.stdout and "2 nodes: talker (required), listener" in result.stdout
    assert result.stderr == ""
    assert not prefix.recorded_pids(), "--check must not start anything"


def test_print_shows_resolved_command_lines(prefix, cli):
    path = prefix.launch(GOOD)
    result = cli.run(str(path), "--print", "rate_hz:=3")
    assert result.returncode == 0, result.stderr
    exe = str(prefix.lib / "fake_node")
    params = str(prefix.share / "params" / "good.yaml")
    assert result.stdout.splitlines() == [
        shlex.join([exe, "--ros-args", "-r", "__node:=talker", "--params-file", params,
                    "-p", "rate_hz:=3", "-r", "objects:=/smoke/objects"]),
        shlex.join([exe, "--ros-args", "-r", "__node:=listener", "-r", "__ns:=/ns"]),
    ]
    assert not prefix.recorded_pids()


def test_package_and_file_name_form(cli):
    result = cli.run("demo", "demo.launch.yaml", "--check")
    assert result.returncode == 0, result.stderr
    assert "1 node: packaged" in result.stdout


def test_show_args(prefix, cli):
    path = prefix.launch(
        'launch:\n  - arg: {name: robot, description: "Robot name"}\n'
        '  - arg: {name: rate_hz, default: "10.0"}\n'
    )
    result = cli.run(str(path), "--show-args")
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "robot (required)  Robot name",
        "rate_hz (default: '10.0')",
    ]


def test_node_that_cannot_start_is_one_line_error(prefix, cli):
    path = prefix.launch(
        """\
        launch:
          - node: {pkg: demo, exec: fake_node, name: fine}
          - node: {pkg: demo, exec: bad_shebang, name: broken}
        """
    )
    result = cli.run(str(path), timeout=15)
    assert result.returncode == 2
    # Node output may hold anything (the 'fine' node may be interrupted while importing);
    # the runner's own lines must not be a traceback.
    own = [ln for ln in result.stderr.splitlines() if not ln.startswith("[fine] ")]
    assert not any("Traceback" in ln for ln in own), result.stderr
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("rlstack_launch: error: ")]
    assert len(errors) == 1 and "node 'broken' could not be started" in errors[0], result.stderr
    # The node that did start was stopped (the fixture checks it is gone).
    assert "a node could not be started, stopping all nodes" in result.stderr


def test_undeclared_command_line_argument_is_one_warning_line(prefix, cli):
    """ros2 launch takes a name:=value no file declares without a word (ros2launch/api/api.py,
    launch_a_launch_file) and starts the graph; so does the runner, with one warning line."""
    path = prefix.launch(GOOD)
    result = cli.run(str(path), "--check", "rate_hx:=3")
    assert result.returncode == 0, result.stderr
    assert "ok:" in result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("rlstack_launch: warning: launch argument 'rate_hx' is not declared")
    assert "ros2 launch ignores it too" in lines[0] and "declared arguments: rate_hz" in lines[0]


def test_unknown_package_in_package_file_form_is_one_line(cli):
    result = cli.run("rlstack_no_such_pkg", "x.launch.yaml", "--check")
    assert_user_error(result, "package 'rlstack_no_such_pkg' not found in the ament index",
                      "build it and source its workspace")
    assert len(result.stderr.strip().splitlines()) == 1
