"""Loading launch files: parsing, substitutions, args, includes, groups, params files."""

from __future__ import annotations

import os

import pytest

from rlstack_launch import (
    NodeSpec,
    check_launch_file,
    load_launch_file,
    load_params_file,
)
from rlstack_launch.errors import EntryError


def test_node_fields_and_every_substitution(prefix, monkeypatch):
    monkeypatch.setenv("RL_TEST_LABEL", "from env")
    monkeypatch.delenv("RL_TEST_UNSET", raising=False)
    path = prefix.launch(
        """\
        launch:
          - arg: {name: rate_hz, default: "10.0", description: "Publish rate, Hz"}
          - let: {name: topic, value: "/t/$(var rate_hz)"}
          - node:
              pkg: demo
              exec: fake_node
              name: talker
              namespace: "robot"
              output: screen
              on_exit: shutdown
              args: "--after 1 --label '$(env RL_TEST_LABEL)'"
              ros_args: "--log-level debug"
              param:
                - {from: "$(find-pkg-share demo)/params/good.yaml"}
                - {name: rate_hz, value: "$(var rate_hz)"}
                - {name: env_default, value: "$(env RL_TEST_UNSET fallback)"}
                - {name: opt, value: "x$(var not_declared dflt)y"}
                - {name: prefix, value: "$(find-pkg-prefix demo)"}
                - {name: here, value: "$(dirname)"}
                - {name: me, value: "$(filename)"}
                - {name: typed, value: 3}
                - {name: flags, value: [true, false]}
                - {name: gains, param: [{name: kp, value: "1.5"}]}
              remap:
                - {from: objects, to: "$(var topic)"}
        """
    )
    (spec,) = load_launch_file(str(path), {})
    share = prefix.root / "share" / "demo"
    assert spec.name == "talker" and spec.label == "talker"
    assert spec.package == "demo" and spec.executable == "fake_node"
    assert spec.exe_path == str(prefix.lib / "fake_node")
    assert spec.namespace == "/robot" and spec.fqn == "/robot/talker"
    assert spec.required is True
    assert spec.args == ["--after", "1", "--label", "from env"]
    assert spec.ros_args == ["--log-level", "debug"]
    assert spec.params == [
        ("file", str(share / "params" / "good.yaml")),
        ("param", "rate_hz", "10.0"),
        ("param", "env_default", "fallback"),
        ("param", "opt", "xdflty"),
        ("param", "prefix", str(prefix.root)),
        ("param", "here", str(prefix.work)),
        ("param", "me", str(path)),
        ("param", "typed", "3"),
        ("param", "flags", "[true, false]"),
        ("param", "gains.kp", "1.5"),
    ]
    assert spec.remaps == [("objects", "/t/10.0")]


def test_empty_string_param_is_passed_as_yaml_empty_string(prefix):
    """rcl rejects '-p name:=' (the perception graph's map_file default); ros2 launch passes ''."""
    path = prefix.launch(
        """\
        launch:
          - arg: {name: map_file, default: ""}
          - node:
              pkg: demo
              exec: fake_node
              param:
                - {name: map_file, value: "$(var map_file)"}
                - {name: literal_empty, value: ""}
        """
    )
    (spec,) = load_launch_file(str(path), {})
    assert spec.params == [("param", "map_file", "''"), ("param", "literal_empty", "''")]
    (spec,) = load_launch_file(str(path), {"map_file": "/tmp/m.json"})
    assert spec.params[0] == ("param", "map_file", "/tmp/m.json")


def test_optenv_is_refused_as_ros2_launch_refuses_it(prefix):
    """$(optenv) is ROS 1; launch's frontend stops with 'Unknown substitution: optenv'."""
    path = prefix.launch(
        """\
        launch:
          - node: {pkg: demo, exec: fake_node, args: "$(optenv RL_TEST_UNSET dflt)"}
        """
    )
    (problem,) = check_launch_file(str(path))
    assert "Unknown substitution: optenv" in problem
    assert "write $(env RL_TEST_UNSET dflt) instead" in problem


def test_command_line_order():
    spec = NodeSpec(
        name="talker",
        package="demo",
        executable="fake_node",
        exe_path="/p/lib/demo/fake_node",
        namespace="/ns",
        params=[
            ("file", "/a.yaml"), ("param", "x", "1"), ("file", "/b.yaml"), ("param", "y", "t"),
        ],
        remaps=[("a", "/b"), ("c", "d")],
        args=["--flag", "v"],
        ros_args=["--log-level", "debug"],
    )
    assert spec.command() == [
        "/p/lib/demo/fake_node", "--flag", "v", "--ros-args",
        "-r", "__node:=talker", "-r", "__ns:=/ns",
        "--params-file", "/a.yaml", "-p", "x:=1", "--params-file", "/b.yaml", "-p", "y:=t",
        "-r", "a:=/b", "-r", "c:=d",
        "--log-level", "debug",
    ]
    root = NodeSpec(name="fake_node", package="demo", executable="fake_node",
                    exe_path="/x", name_given=False)
    assert root.command() == ["/x", "--ros-args"]


def test_arg_defaults_overrides_and_missing_required(prefix):
    path = prefix.launch(
        """\
        launch:
          - arg: {name: robot}
          - arg: {name: rate, default: "1"}
          - arg: {name: mode, default: "sim", choice: [{value: sim}, {value: real}]}
          - node:
              pkg: demo
              exec: fake_node
              name: "$(var robot)_driver"
              param:
                - {name: rate, value: "$(var rate)"}
                - {name: mode, value: "$(var mode)"}
        """
    )
    (spec,) = load_launch_file(str(path), {"robot": "r2", "rate": "7"})
    assert spec.name == "r2_driver"
    assert spec.params == [("param", "rate", "7"), ("param", "mode", "sim")]

    problems = check_launch_file(str(path), {})
    # One problem: the node that uses $(var robot) is not reported a second time.
    assert len(problems) == 1, problems
    assert "required launch argument 'robot' was not given" in problems[0]
    assert "pass robot:=VALUE" in problems[0]
    assert problems[0].startswith(f"{path}:2: arg 'robot'")

    problems = check_launch_file(str(path), {"robot": "r", "mode": "space"})
    assert len(problems) == 1 and "not one of the allowed choices" in problems[0]

    # ros2 launch ignores an undeclared name:=value; the runner starts the graph and warns.
    from rlstack_launch import load

    result = load(str(path), {"robot": "r", "rta": "3"})
    assert not result.problems and len(result.nodes) == 1
    assert any("launch argument 'rta' is not declared" in w for w in result.warnings)


def test_include_passes_args_and_is_scoped(prefix):
    prefix.write(
        "sub/child.launch.yaml",
        """\
        launch:
          - arg: {name: who, default: "nobody"}
          - arg: {name: rate, default: "1"}
          - let: {name: child_only, value: "secret"}
          - node:
              pkg: demo
              exec: fake_node
              name: "$(var who)"
              param: [{name: rate, value: "$(var rate)"}, {name: dir, value: "$(dirname)"}]
        """,
    )
    path = prefix.launch(
        """\
        launch:
          - arg: {name: rate, default: "2"}
          - include:
              file: "$(dirname)/sub/child.launch.yaml"
              arg: [{name: who, value: "alice"}]
          - include:
              file: "$(dirname)/sub/child.launch.yaml"
              arg: [{name: who, value: "bob"}, {name: rate, value: "9"}]
        """
    )
    alice, bob = load_launch_file(str(path), {"rate": "5"})
    assert alice.name == "alice"
    # The including file's value (from the command line) wins over the child's default.
    assert alice.params == [("param", "rate", "5"), ("param", "dir", str(prefix.work / "sub"))]
    assert bob.params[0] == ("param", "rate", "9")

    leaky = prefix.launch(
        """\
        launch:
          - include: {file: "$(dirname)/sub/child.launch.yaml"}
          - node: {pkg: demo, exec: fake_node, name: n2, args: "$(var child_only)"}
        """,
        name="leaky.launch.yaml",
    )
    problems = check_launch_file(str(leaky))
    assert len(problems) == 1 and "launch argument 'child_only' is not set" in problems[0]


def test_include_errors_name_both_files(prefix):
    prefix.write(
        "bad_child.launch.yaml",
        """\
        launch:
          - arg: {name: needed}
          - node: {pkg: demo, exec: fake_node, name: x, args: "$(var needed)"}
        """,
    )
    path = prefix.launch(
        """\
        launch:
          - include: {file: "$(dirname)/bad_child.launch.yaml"}
          - include: {file: "$(dirname)/missing.launch.yaml"}
          - include: {file: "$(dirname)/test.launch.yaml"}
        """
    )
    problems = check_launch_file(str(path))
    assert len(problems) == 3, problems
    assert "bad_child.launch.yaml:2: arg 'needed'" in problems[0]
    assert f"included from {path}:2" in problems[0]
    assert "pass it in the include's arg list" in problems[0]
    assert "missing.launch.yaml does not exist" in problems[1]
    assert "include cycle" in problems[2]


def test_group_namespaces_scoping_and_conditions(prefix):
    path = prefix.launch(
        """\
        launch:
          - arg: {name: use_extra, default: "false"}
          - push-ros-namespace: {namespace: top}
          - group:
              - push_ros_namespace: {namespace: arm}
              - node: {pkg: demo, exec: fake_node, name: a}
              - node: {pkg: demo, exec: fake_node, name: b, namespace: "/abs"}
              - let: {name: inner, value: "1"}
          - group:
              scoped: false
              children:
                - let: {name: leaked, value: "yes"}
          - node: {pkg: demo, exec: fake_node, name: c, args: "$(var leaked)"}
          - node: {pkg: demo, exec: fake_node, name: d, if: "$(var use_extra)"}
          - node: {pkg: demo, exec: fake_node, name: e, unless: "$(var use_extra)"}
          - group:
              if: "$(var use_extra)"
              children:
                - arg: {name: extra_only, default: "x"}
        """
    )
    specs = load_launch_file(str(path))
    assert [(s.name, s.namespace) for s in specs] == [
        ("a", "/top/arm"), ("b", "/abs"), ("c", "/top"), ("e", "/top"),
    ]
    assert specs[2].args == ["yes"]
    # An arg declared only inside a disabled branch is still a known name.
    assert not check_launch_file(str(path), {"extra_only": "y"})
    names = [s.name for s in load_launch_file(str(path), {"use_extra": "true"})]
    assert names == ["a", "b", "c", "d"]
    problems = check_launch_file(str(path), {"use_extra": "maybe"})
    assert any("'if' evaluated to 'maybe', not a boolean" in p for p in problems)


def test_duplicate_node_names_and_labels(prefix):
    path = prefix.launch(
        """\
        launch:
          - node: {pkg: demo, exec: fake_node, name: x, namespace: one}
          - node: {pkg: demo, exec: fake_node, name: x, namespace: two}
          - node: {pkg: demo, exec: fake_node}
          - node: {pkg: demo, exec: fake_node}
        """
    )
    specs = load_launch_file(str(path))
    assert [s.label for s in specs] == ["one/x", "two/x", "fake_node", "fake_node-2"]
    assert "__node:=fake_node" not in " ".join(specs[2].command())
    dup = prefix.launch(
        """\
        launch:
          - node: {pkg: demo, exec: fake_node, name: x}
          - node: {pkg: demo, exec: fake_node, name: x}
        """,
        name="dup.launch.yaml",
    )
    (problem,) = check_launch_file(str(dup))
    assert "node /x is already started at" in problem


def test_all_problems_of_a_node_are_reported(prefix):
    path = prefix.launch(
        """\
        launch:
          - node:
              pkg: demo
              exec: nope
              name: "bad name"
              param: [{from: /does/not/exist.yaml}]
        """
    )
    problems = check_launch_file(str(path))
    assert len(problems) == 3, problems
    assert all(p.startswith(f"{path}:2: node 'bad name': ") for p in problems)
    joined = "\n".join(problems)
    assert "not a valid node name" in joined
    assert "executable 'nope' not found in package 'demo'" in joined
    assert "available: bad_shebang, fake_node, not_executable" in joined
    assert "params file /does/not/exist.yaml does not exist" in joined


def test_duplicate_yaml_keys_are_errors(prefix):
    path = prefix.launch(
        """\
        launch:
          - node:
              pkg: demo
              exec: fake_node
              param: [{name: a, value: "1"}]
              param: [{name: b, value: "2"}]
        """
    )
    (problem,) = check_launch_file(str(path))
    assert "duplicate key 'param' at line 6" in problem


# --------------------------------------------------------------------------- params files


@pytest.mark.parametrize(
    "text",
    [
        "talker:\n  ros__parameters: {a: 1, b: [1, 2], c: {d: x}, e: 2024-01-01}\n",
        "/robot:\n  driver:\n    ros__parameters: {port: /dev/tty}\n",
        "/**:\n  ros__parameters: {}\n",
    ],
)
def test_params_file_accepts_valid_layouts(tmp_path, text):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    assert load_params_file(str(path))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("talker: [\n", "is not valid YAML"),
        ("", "is empty"),
        ("- a\n- b\n", "must be a mapping of node names, got a list"),
        ("talker:\n  rate: 1\n", "entry 'talker' has no 'ros__parameters' mapping"),
        ("talker:\n  ros_parameters: {a: 1}\n", "'ros_parameters' instead of 'ros__parameters'"),
        ("talker:\n  ros__parameters: [1, 2]\n", "'talker.ros__parameters' must be a mapping"),
        ("talker: 3\n", "entry 'talker' must be a mapping"),
        ("talker:\n  ros__parameters: {cov: [0.5, 0]}\n", "mixes types in one list"),
        ("talker:\n  ros__parameters: {a: }\n", "'talker: a' has no value"),
    ],
)
def test_params_file_rejects_malformed(tmp_path, text, expected):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(EntryError) as info:
        load_params_file(str(path))
    message = info.value.render()
    assert expected in message
    assert str(path) in message
    assert "\n" not in message


def test_params_file_missing(tmp_path):
    with pytest.raises(EntryError, match="does not exist"):
        load_params_file(os.path.join(tmp_path, "nope.yaml"))
