"""The attribute types of the YAML frontend, table-driven: what ``ros2 launch`` accepts is
accepted, what it refuses is refused with its message.

Every row is one launch entry (``{PKG}`` / ``{EXE}`` stand for a package and one of its
executables) and the message upstream's parser gives for it, or ``None`` where upstream
accepts it. The expectations come from upstream's source, named per group of rows:

* ``launch_yaml/entity.py`` ``Entity.get_attr``: a value must be an instance of the asked
  ``data_type`` or a ``str`` (``launch/utilities/type_utils.py`` ``is_instance_of`` with
  ``can_be_str=True``), else ``Attribute 'K' of Entity 'E' expected to be of type 'T', got
  'U'``; ``data_type=List[Entity]`` wants a list whose first item is a mapping, else ``...
  expected to be a list of dictionaries.``; a required attribute that is missing gives
  ``Can not find attribute 'K' in Entity 'E'``.
* the ``parse()`` classmethods name the ``data_type`` of each attribute (see the comments).

The same rows, with a real package, were run through upstream's own parser
(``tools/check_launch_upstream.py``), which gave these messages.
"""

from __future__ import annotations

import pytest

from rlstack_launch import check_launch_file, load
from rlstack_launch.attr_types import is_valid_value, typed_bool
from rlstack_launch.errors import EntryError

STR, INT, FLOAT, BOOL = "<class 'str'>", "<class 'int'>", "<class 'float'>", "<class 'bool'>"
LIST, DICT, NONE = "<class 'list'>", "<class 'dict'>", "<class 'NoneType'>"


def wrong(key: str, entity: str, expected: str, got: str) -> str:
    return f"Attribute '{key}' of Entity '{entity}' expected to be of type '{expected}', got '{got}'"


def not_list(key: str, entity: str) -> str:
    return f"Attribute '{key}' of Entity '{entity}' expected to be a list of dictionaries."


N = "node: {{pkg: {PKG}, exec: {EXE}, name: n, %s}}"

CASES = [
    # --- launch/action.py, Action.parse: if / unless are str
    (N % 'if: "true"', None),
    (N % "if: true", wrong("if", "node", STR, BOOL)),
    (N % "unless: 0", wrong("unless", "node", STR, INT)),
    (N % 'if: "true", unless: "false"', "if and unless conditions can't be used simultaneously"),
    # --- launch_ros/actions/node.py, Node.parse (+ ExecuteProcess.parse): str attributes
    ("node: {{pkg: {PKG}, exec: {EXE}}}", None),
    (N % "namespace: ns", None),
    ("node: {{pkg: {PKG}, exec: {EXE}, name: 1}}", wrong("name", "node", STR, INT)),
    ("node: {{pkg: true, exec: {EXE}, name: n}}", wrong("pkg", "node", STR, BOOL)),
    ("node: {{pkg: {PKG}, exec: 3.5, name: n}}", wrong("exec", "node", STR, FLOAT)),
    ("node: {{pkg: {PKG}, name: n}}", "Can not find attribute 'exec' in Entity 'node'"),
    (N % "namespace: 5", wrong("namespace", "node", STR, INT)),
    (N % "output: 1", wrong("output", "node", STR, INT)),
    (N % "on_exit: true", wrong("on_exit", "node", STR, BOOL)),
    (N % "args: 1", wrong("args", "node", STR, INT)),
    (N % "ros_args: [--log-level, debug]", wrong("ros_args", "node", STR, LIST)),
    # ExecuteProcess.parse: respawn is a str (a substitution), read as a bool at start-up by
    # ExecuteLocal.prepare (perform_typed_substitution -> coerce_to_type(..., bool))
    (N % 'respawn: "true"', None),
    (N % 'respawn: "1"', None),
    (N % 'respawn: "off"', None),
    (N % "respawn: true", wrong("respawn", "node", STR, BOOL)),
    (N % "respawn: 1", wrong("respawn", "node", STR, INT)),
    (N % 'respawn: "sometimes"', "Cannot convert value 'sometimes' to '<class 'bool'>'"),
    # ExecuteProcess.parse: respawn_delay is a float, then compared with 0.0
    (N % 'respawn: "true", respawn_delay: 2.0', None),
    (N % "respawn_delay: 2", wrong("respawn_delay", "node", FLOAT, INT)),
    (N % "respawn_delay: true", wrong("respawn_delay", "node", FLOAT, BOOL)),
    (N % 'respawn_delay: "2.0"', "'<' not supported between instances of 'str' and 'float'"),
    (N % "respawn_delay: -1.0",
     "Attribute respawn_delay of Entity node expected to be a non-negative value but got `-1.0`"),
    # Node.parse: remap is List[Entity] of {from: str, to: str}
    (N % "remap: [{{from: a, to: b}}]", None),
    (N % "remap: {{from: a, to: b}}", not_list("remap", "node")),
    (N % "remap: []", "IndexError: list index out of range"),
    (N % "remap: [{{from: 1, to: b}}]", wrong("from", "remap", STR, INT)),
    (N % "remap: [{{from: a}}]", "Can not find attribute 'to' in Entity 'remap'"),
    # Node.parse_nested_parameters: param is List[Entity]; from / name are str; value has
    # data_type=None (type_utils.is_instance_of_valid_type: a scalar, or a uniform list
    # in which strings may mix); nested param is List[Entity]
    (N % "param: [{{name: a, value: 1}}]", None),
    (N % "param: [{{name: a, value: 1.5}}]", None),
    (N % "param: [{{name: a, value: true}}]", None),
    (N % 'param: [{{name: a, value: "x"}}]', None),
    (N % "param: [{{name: a, value: [1, 2]}}]", None),
    # launch/frontend/parse_substitution.py, parse_if_substitutions: one type per list
    (N % "param: [{{name: a, value: [x, y]}}]", None),
    (N % "param: [{{name: a, value: [x, 1]}}]", "The result is a non-uniform list"),
    (N % "param: [{{name: a, value: [1, true]}}]", "The result is a non-uniform list"),
    (N % "param: [{{name: a, value: [1, 2.0]}}]", wrong("value", "param", "None", LIST)),
    (N % "param: [{{name: a, value: {{b: 1}}}}]", wrong("value", "param", "None", DICT)),
    (N % "param: [{{name: a, value: }}]", wrong("value", "param", "None", NONE)),
    (N % "param: [{{name: 1, value: x}}]", wrong("name", "param", STR, INT)),
    (N % "param: {{name: a, value: 1}}", not_list("param", "node")),
    (N % "param: [{{name: g, param: [{{name: kp, value: 1.5}}]}}]", None),
    (N % "param: [{{name: g, param: [{{name: 2, value: 1}}]}}]", wrong("name", "param", STR, INT)),
    (N % "param: [{{name: g, param: {{name: kp, value: 1}}}}]", not_list("param", "param")),
    (N % "param: [{{from: 1}}]", wrong("from", "param", STR, INT)),
    (N % "param: [{{name: a, from: x.yaml}}]", "name and from attributes are mutually exclusive"),
    (N % "param: [{{name: a}}]", "either a value attribute or nested params are needed"),
    # --- launch/actions/declare_launch_argument.py, DeclareLaunchArgument.parse
    ('arg: {{name: x, default: "1", description: "d"}}', None),
    ("arg: {{name: x, default: 1}}", wrong("default", "arg", STR, INT)),
    ('arg: {{name: 1, default: "1"}}', wrong("name", "arg", STR, INT)),
    ('arg: {{name: x, default: "1", description: 1.0}}', wrong("description", "arg", STR, FLOAT)),
    ("arg: {{name: x, default: a, choice: [{{value: a}}, {{value: b}}]}}", None),
    ("arg: {{name: x, default: a, choice: [{{value: 1}}]}}", wrong("value", "choice", STR, INT)),
    ("arg: {{name: x, default: a, choice: {{value: a}}}}", not_list("choice", "arg")),
    # --- launch/actions/set_launch_configuration.py, SetLaunchConfiguration.parse
    ('let: {{name: x, value: "1"}}', None),
    ('let: {{name: 1, value: "1"}}', wrong("name", "let", STR, INT)),
    ("let: {{name: x, value: 1.0}}", wrong("value", "let", STR, FLOAT)),
    ("let: {{name: x}}", "Can not find attribute 'value' in Entity 'let'"),
    # --- launch/actions/include_launch_description.py, IncludeLaunchDescription.parse
    ('include: {{file: "$(dirname)/child.launch.yaml"}}', None),
    ("include: {{file: 1}}", wrong("file", "include", STR, INT)),
    ('include: {{file: "$(dirname)/child.launch.yaml", arg: [{{name: a, value: "1"}}]}}', None),
    ('include: {{file: "$(dirname)/child.launch.yaml", arg: [{{name: a, value: 1}}]}}',
     wrong("value", "arg", STR, INT)),
    ('include: {{file: "$(dirname)/child.launch.yaml", arg: {{name: a, value: "1"}}}}',
     not_list("arg", "include")),
    # --- launch/actions/group_action.py, GroupAction.parse: scoped / forwarding are bool
    # (or str), keep is List[Entity] of {name: str, value: str}
    ("group: {{scoped: true, forwarding: false, children: [{{let: {{name: y, value: b}}}}]}}", None),
    ('group: {{scoped: "no", children: [{{let: {{name: y, value: b}}}}]}}', None),
    ("group: {{scoped: 1, children: [{{let: {{name: y, value: b}}}}]}}",
     wrong("scoped", "group", BOOL, INT)),
    ("group: {{forwarding: 0.0, children: [{{let: {{name: y, value: b}}}}]}}",
     wrong("forwarding", "group", BOOL, FLOAT)),
    ('group: {{keep: [{{name: a, value: "1"}}], children: [{{let: {{name: y, value: b}}}}]}}', None),
    ("group: {{keep: [{{name: a, value: 1}}], children: [{{let: {{name: y, value: b}}}}]}}",
     wrong("value", "keep", STR, INT)),
    ("group: {{if: true, children: [{{let: {{name: y, value: b}}}}]}}", wrong("if", "group", STR, BOOL)),
    # a disabled branch is parsed (and type-checked) all the same
    ('group: {{if: "false", children: [{{node: {{pkg: {PKG}, exec: {EXE}, respawn: true}}}}]}}',
     wrong("respawn", "node", STR, BOOL)),
    # --- launch_ros/actions/push_ros_namespace.py, PushROSNamespace.parse
    ("push-ros-namespace: {{namespace: ns}}", None),
    ("push-ros-namespace: {{namespace: 1}}", wrong("namespace", "push-ros-namespace", STR, INT)),
    ("push_ros_namespace: {{namespace: false}}", wrong("namespace", "push_ros_namespace", STR, BOOL)),
]


def launch_text(entry: str, pkg: str, exe: str) -> str:
    """The launch file of one table row."""
    return "launch:\n  - " + entry.format(PKG=pkg, EXE=exe) + "\n"


@pytest.mark.parametrize("entry, message", CASES, ids=[c[0] for c in CASES])
def test_attribute_types_match_ros2_launch(prefix, entry, message):
    prefix.write("child.launch.yaml", "launch:\n  - arg: {name: a, default: '0'}\n")
    path = prefix.launch(launch_text(entry, "demo", "fake_node"))
    problems = check_launch_file(str(path), {})
    if message is None:
        assert problems == []
    else:
        assert len(problems) == 1, problems
        assert message in problems[0], problems[0]
        # Prefixed with the file and line of the entry, as every problem is.
        assert problems[0].startswith(f"{path}:2: ")


def test_a_string_scoped_is_read_as_ros2_launch_reads_it(prefix):
    """GroupAction tests the truth of a YAML string: 'false' is a non-empty string, so the
    group stays scoped; the runner builds the same graph and says why."""
    path = prefix.launch(
        """\
        launch:
          - group:
              scoped: "false"
              children:
                - let: {name: leaked, value: "yes"}
          - group:
              scoped: false
              children:
                - let: {name: really_leaked, value: "yes"}
          - node: {pkg: demo, exec: fake_node, name: c, args: "$(var leaked no) $(var really_leaked)"}
        """
    )
    result = load(str(path))
    assert result.problems == []
    assert result.nodes[0].args == ["no", "yes"]
    assert any("scoped: 'false' is a string, which ros2 launch reads as true" in w
               for w in result.warnings), result.warnings


def test_keep_sets_values_in_a_forwarding_group_too(prefix):
    path = prefix.launch(
        """\
        launch:
          - let: {name: outer, value: "o"}
          - group:
              keep: [{name: kept, value: "k-$(var outer)"}]
              children:
                - node: {pkg: demo, exec: fake_node, name: a, args: "$(var kept) $(var outer)"}
          - group:
              forwarding: false
              keep: [{name: kept, value: "k2"}]
              children:
                - node: {pkg: demo, exec: fake_node, name: b, args: "$(var kept) $(var outer x)"}
        """
    )
    a, b = load(str(path)).nodes
    assert a.args == ["k-o", "o"]
    assert b.args == ["k2", "x"]


@pytest.mark.parametrize(
    "value, ok",
    [
        (1, True), (1.5, True), (True, True), ("x", True), ([], True), ([1, 2], True),
        (["a", 1, "b"], True), ([True, "x"], True), ([1, True], True),  # bool is an int
        ([1, 2.0], False), ([True, 1], False), ([[1]], False), ({"a": 1}, False), (None, False),
    ],
)
def test_param_value_types(value, ok):
    """launch/utilities/type_utils.py, is_instance_of_valid_type(value, can_be_str=True)."""
    assert is_valid_value(value) is ok


@pytest.mark.parametrize(
    "text, expected",
    [("true", True), ("True", True), ("1", True), ("yes", True), ("on", True),
     ("false", False), ("FALSE", False), ("0", False), ("no", False), ("off", False)],
)
def test_respawn_words(text, expected):
    """coerce_to_type(text, bool): '1'/'0', then what yaml.safe_load reads as a bool."""
    assert typed_bool(text, "respawn") is expected


@pytest.mark.parametrize("text", ["", "maybe", "2", "tRue", "[true]"])
def test_respawn_words_refused(text):
    with pytest.raises(EntryError, match=r"Cannot convert value '.*' to '<class 'bool'>'"):
        typed_bool(text, "respawn")
