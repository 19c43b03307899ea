"""Reading ROS 2 YAML launch files into a flat list of :class:`NodeSpec`.

The dialect is the official YAML frontend of ``ros2 launch`` (``launch_yaml`` +
``launch_ros``), restricted to the tags and keys listed in :data:`_NODE_KEYS` and friends.
Everything outside that subset is reported as an error, never skipped, so a file that
passes ``--check`` here starts the same graph as ``ros2 launch`` would.

Loading resolves everything up front (packages, executables, params files, required
arguments) and collects *all* problems, one line each, instead of stopping at the first:
a CI log then shows every typo of a launch file in one run.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import yaml

from .attr_types import check_entity, missing_error, type_error, typed_bool
from .errors import EntryError, LaunchError, SkipEntry
from .params_file import validate_params_file
from .substitutions import SubstitutionContext, package_prefix, package_share, substitute

# A ROS name token: what rcl accepts for node names and namespace segments.
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Launch argument names are free-form in ros2 launch; only reject what cannot round-trip
# through 'name:=value' on a command line or '$(var name)' in a file.
_ARG_NAME = re.compile(r"[A-Za-z0-9_.\-/]+\Z")

_COMMON_KEYS = ("if", "unless")
_NODE_KEYS = (
    "pkg", "exec", "name", "namespace", "output", "on_exit", "respawn", "respawn_delay",
    "param", "remap", "args", "ros_args",
) + _COMMON_KEYS
_ARG_KEYS = ("name", "default", "description", "choice") + _COMMON_KEYS
_LET_KEYS = ("name", "value") + _COMMON_KEYS
_INCLUDE_KEYS = ("file", "arg") + _COMMON_KEYS
_GROUP_KEYS = ("scoped", "forwarding", "keep", "children") + _COMMON_KEYS
_PUSH_NS_KEYS = ("namespace",) + _COMMON_KEYS
_SUPPORTED_TAGS = (
    "arg", "let", "node", "include", "group", "push-ros-namespace", "push_ros_namespace",
)
# Real launch tags this runner does not implement; named so the error can say so.
_ROS_TAGS_NOT_SUPPORTED = (
    "executable", "set_env", "set-env", "unset_env", "unset-env", "log", "timer",
    "set_parameter", "set-parameter", "set_remap", "set-remap", "node_container",
    "load_composable_node", "composable_node", "lifecycle_node", "shutdown",
    "set_launch_configuration", "declare_launch_argument", "opaque_function",
    "reset", "append_env", "prepend_env",
)
_OUTPUT_VALUES = ("screen", "log", "both")
_KEYS_BY_TAG = {
    "arg": _ARG_KEYS,
    "let": _LET_KEYS,
    "node": _NODE_KEYS,
    "include": _INCLUDE_KEYS,
    "group": _GROUP_KEYS,
    "push-ros-namespace": _PUSH_NS_KEYS,
    "push_ros_namespace": _PUSH_NS_KEYS,
}


@dataclass
class NodeSpec:
    """One node of the graph, fully resolved and ready to start.

    Attributes:
        name: node name (``-r __node:=``); for a node without ``name:`` in the launch file
            this is the executable name and is only used for display.
        package: ROS package the executable comes from.
        executable: executable name inside the package.
        exe_path: absolute path ``<prefix>/lib/<package>/<executable>``.
        namespace: absolute namespace, ``/`` for the root namespace.
        params: in launch-file order: ``('file', path)`` or ``('param', name, value)``.
        remaps: ``(from, to)`` remapping rules, in order.
        required: the launch file says ``on_exit: shutdown``.
        respawn: the launch file says ``respawn: true``: the runner starts the node again
            whenever it exits while the graph runs (as ``ros2 launch`` does).
        respawn_delay: seconds between the exit and the new start (``respawn_delay``).
        args: extra argv placed before ``--ros-args``.
        ros_args: extra ROS arguments placed at the end, after ``--ros-args``.
        output: ``screen``, ``log`` or ``both`` as written (the runner always prints).
        name_given: False when the launch file had no ``name:`` (no ``__node`` remap).
        source: ``file:line`` of the ``node`` entry, for messages.
        label: unique short name used to prefix the node's output lines.
    """

    name: str
    package: str
    executable: str
    exe_path: str
    namespace: str = "/"
    params: List[Tuple[str, ...]] = field(default_factory=list)
    remaps: List[Tuple[str, str]] = field(default_factory=list)
    required: bool = False
    respawn: bool = False
    respawn_delay: float = 0.0
    args: List[str] = field(default_factory=list)
    ros_args: List[str] = field(default_factory=list)
    output: str = "screen"
    name_given: bool = True
    source: str = ""
    label: str = ""

    @property
    def fqn(self) -> str:
        """Fully qualified node name, e.g. ``/robot/driver``."""
        return self.namespace.rstrip("/") + "/" + self.name

    def command(self) -> List[str]:
        """Return the argv that starts this node.

        Order: ``exe args... --ros-args -r __node:=N [-r __ns:=NS] params... remaps...
        ros_args...``; params files and single params interleave as written, so a later
        ``-p`` overrides an earlier file exactly as ``ros2 launch`` layers them.
        """
        cmd = [self.exe_path, *self.args, "--ros-args"]
        if self.name_given:
            cmd += ["-r", f"__node:={self.name}"]
        if self.namespace != "/":
            cmd += ["-r", f"__ns:={self.namespace}"]
        for param in self.params:
            if param[0] == "file":
                cmd += ["--params-file", param[1]]
            else:
                cmd += ["-p", f"{param[1]}:={param[2]}"]
        for src, dst in self.remaps:
            cmd += ["-r", f"{src}:={dst}"]
        cmd += self.ros_args
        return cmd


@dataclass
class ArgInfo:
    """A declared launch argument (for ``--show-args`` and unknown-argument checks)."""

    name: str
    default: Optional[str]
    description: str
    source: str


@dataclass
class LoadResult:
    """Everything learned from loading a launch file; see :func:`load`."""

    nodes: List[NodeSpec]
    problems: List[str]
    warnings: List[str]
    declared: Dict[str, ArgInfo]


def load_launch_file(path: str, args: Optional[Mapping[str, str]] = None) -> List[NodeSpec]:
    """Load ``path`` with command-line launch arguments ``args`` and return its nodes.

    Raises:
        LaunchError: with every problem found (one line each); nothing is partially
            returned because starting half a graph is worse than starting none.
    """
    result = load(path, args)
    if result.problems:
        raise LaunchError(result.problems)
    return result.nodes


def check_launch_file(path: str, args: Optional[Mapping[str, str]] = None) -> List[str]:
    """Resolve ``path`` completely without starting anything; return the problems (or [])."""
    return load(path, args).problems


def load(path: str, args: Optional[Mapping[str, str]] = None) -> LoadResult:
    """Load a launch file and return nodes, problems, warnings and declared arguments."""
    builder = _Builder(dict(args or {}))
    builder.run(path)
    return LoadResult(builder.nodes, builder.problems, builder.warnings, builder.declared)


def find_launch_file(package: str, file_name: str) -> str:
    """Find ``file_name`` in the share directory of ``package`` (``ros2 launch PKG FILE``).

    Raises:
        LaunchError: the package is unknown, or the file is missing or ambiguous.
    """
    try:
        share = package_share(package)
    except EntryError as exc:
        raise LaunchError(exc.render()) from None
    matches = []
    for root, _dirs, files in os.walk(share):
        if file_name in files:
            matches.append(os.path.join(root, file_name))
    if not matches:
        raise LaunchError(
            f"no file named '{file_name}' in the share directory of '{package}' ({share}) "
            f"(install it via data_files / install(DIRECTORY launch ...) and rebuild)"
        )
    if len(matches) > 1:
        raise LaunchError(
            f"'{file_name}' is ambiguous in package '{package}': {', '.join(sorted(matches))} "
            f"(pass the full path instead)"
        )
    return matches[0]


# --------------------------------------------------------------------------- YAML reading


class _LineDict(dict):
    """A dict that remembers the line its YAML mapping started on (for messages)."""

    line: int = 0


class _LineLoader(yaml.SafeLoader):
    """SafeLoader that records line numbers and rejects duplicate keys.

    Duplicate keys are an error because PyYAML would silently keep only the last one,
    e.g. a second ``param:`` list in a node would drop the first without a word.
    """


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _LineDict:
    seen: Set[Any] = set()
    for key_node, _value in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value != "<<":
            if key_node.value in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key '{key_node.value}'", key_node.start_mark
                )
            seen.add(key_node.value)
    loader.flatten_mapping(node)
    result = _LineDict()
    result.line = node.start_mark.line + 1
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "unhashable mapping key", key_node.start_mark
            ) from None
        result[key] = loader.construct_object(value_node, deep=True)
    return result


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _read_yaml(path: str) -> Any:
    """Parse a YAML file with line numbers; raises EntryError with a one-line reason."""
    try:
        with open(path, "r", encoding="utf-8") as handle:
            return yaml.load(handle, Loader=_LineLoader)  # noqa: S506 (SafeLoader subclass)
    except FileNotFoundError:
        raise EntryError(f"launch file {path} does not exist", "check the path") from None
    except IsADirectoryError:
        raise EntryError(
            f"launch file {path} is a directory", "give a .launch.yaml file"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EntryError(
            f"cannot read launch file {path}: {exc}", "check its permissions"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise EntryError(
            f"{path} is not valid YAML: {problem}{where}", "fix the YAML syntax"
        ) from None


# --------------------------------------------------------------------------- building


@dataclass
class _Scope:
    """Launch configurations visible at a point of the file, plus the pushed namespace."""

    variables: Dict[str, str]
    namespace: str = "/"
    # Required arguments that were reported missing; later $(var) uses skip silently.
    missing: Set[str] = field(default_factory=set)

    def child(self) -> "_Scope":
        """A copy for a scoped group or include: changes inside do not leak out."""
        return _Scope(dict(self.variables), self.namespace, set(self.missing))


@dataclass
class _FileCtx:
    """The launch file being read and how it was reached (for messages and $(dirname))."""

    path: str  # absolute
    display: str  # as shown in messages
    included_from: Optional[str] = None  # "file:line" of the include entry, if any


class _Builder:
    """Walks launch files, collecting nodes, problems, warnings and declared arguments."""

    def __init__(self, cli_args: Dict[str, str]) -> None:
        self.cli_args = cli_args
        self.nodes: List[NodeSpec] = []
        self.problems: List[str] = []
        self.warnings: List[str] = []
        self.declared: Dict[str, ArgInfo] = {}
        self.used_vars: Set[str] = set()
        self.skipped_args: Set[str] = set()  # declared in branches disabled by if/unless
        self.include_stack: List[str] = []

    # ---- entry points

    def run(self, path: str) -> None:
        """Load the top-level file, then run the checks that need the whole graph."""
        bad_names = [name for name in self.cli_args if not _ARG_NAME.match(name)]
        for name in bad_names:
            self.problems.append(
                f"'{name}:=...' is not a valid launch argument name "
                f"(use letters, digits and '_', e.g. rate_hz:=5)"
            )
        ext = os.path.splitext(path)[1].lower()
        if ext in (".py", ".xml"):
            self.problems.append(
                f"{path}: only YAML launch files are supported, not {ext} "
                f"(write the graph as a .launch.yaml file)"
            )
            return
        scope = _Scope(dict(self.cli_args))
        self._load_file(path, path, scope, None)
        if not self.problems:
            self._check_cli_args(path)
            self._check_duplicates()
        _assign_labels(self.nodes)

    def _check_cli_args(self, path: str) -> None:
        # ros2 launch sets every name:=value as a launch configuration and says nothing about
        # names no file declares (ros2launch/api/api.py, launch_a_launch_file); the graph
        # starts the same here, with one warning line per such name against typos.
        known = set(self.declared) | self.used_vars | self.skipped_args
        for name in self.cli_args:
            if name not in known and _ARG_NAME.match(name):
                declared = ", ".join(sorted(self.declared)) or "none"
                self._warn(
                    f"launch argument '{name}' is not declared by {path} or its includes, "
                    f"so it changes nothing; ros2 launch ignores it too "
                    f"(declared arguments: {declared}; check the spelling)"
                )

    def _check_duplicates(self) -> None:
        seen: Dict[str, NodeSpec] = {}
        for spec in self.nodes:
            if not spec.name_given:
                continue
            other = seen.get(spec.fqn)
            if other is not None:
                self.problems.append(
                    f"{spec.source}: node {spec.fqn} is already started at {other.source} "
                    f"(give the nodes different names or namespaces)"
                )
            else:
                seen[spec.fqn] = spec

    # ---- files and entries

    def _load_file(
        self, path: str, display: str, scope: _Scope, included_from: Optional[str]
    ) -> None:
        abspath = os.path.abspath(path)
        if abspath in self.include_stack:
            chain = " -> ".join(self.include_stack + [abspath])
            raise EntryError(f"include cycle: {chain}", "remove the include that loops back")
        try:
            data = _read_yaml(path)
        except EntryError as exc:
            if included_from is not None:
                raise
            self.problems.append(exc.render())
            return
        fctx = _FileCtx(abspath, display, included_from)
        if not isinstance(data, dict) or list(data.keys()) != ["launch"]:
            self._report(fctx, 1, "file", EntryError(
                "a launch file must be a mapping with the single key 'launch'",
                "start the file with 'launch:' followed by a list of entries",
            ))
            return
        entries = data["launch"]
        if entries is None:
            entries = []
        if not isinstance(entries, list):
            self._report(fctx, getattr(data, "line", 1), "launch", EntryError(
                f"'launch' must be a list of entries, got {_kind(entries)}",
                "write each entry as '- node: {...}', '- arg: {...}', ...",
            ))
            return
        self.include_stack.append(abspath)
        try:
            self._run_entries(entries, fctx, scope, getattr(data, "line", 1))
        finally:
            self.include_stack.pop()

    def _run_entries(
        self, entries: Sequence[Any], fctx: _FileCtx, scope: _Scope, line: int
    ) -> None:
        for entry in entries:
            entry_line = getattr(entry, "line", line)
            desc = _describe(entry)
            try:
                self._run_entry(entry, fctx, scope, entry_line)
            except EntryError as exc:
                self._report(fctx, entry_line, desc, exc)
            except SkipEntry:
                pass

    def _report(self, fctx: _FileCtx, line: int, desc: str, exc: EntryError) -> None:
        where = f"{fctx.display}:{line}: {desc}"
        if fctx.included_from:
            where += f" (included from {fctx.included_from})"
        self.problems.append(f"{where}: {exc.render()}")

    def _run_entry(self, entry: Any, fctx: _FileCtx, scope: _Scope, line: int) -> None:
        tag, body = _split_entry(entry)
        if self._type_errors(tag, body, fctx, line, _describe(entry)):
            return
        if tag == "group" and isinstance(body, list):
            # Short form: 'group: [children...]' is a scoped group with default options.
            self._run_entries(body, fctx, scope.child(), line)
            return
        ctx = self._sub_ctx(fctx, scope)
        if not self._enabled(body, tag, ctx):
            # ros2 launch parses disabled entries too, so their structure must still be valid.
            self._scan_disabled(tag, body, fctx, line)
            return
        handler: Callable[..., None] = {
            "arg": self._do_arg,
            "let": self._do_let,
            "node": self._do_node,
            "include": self._do_include,
            "group": self._do_group,
            "push-ros-namespace": self._do_push_ns,
            "push_ros_namespace": self._do_push_ns,
        }[tag]
        handler(body, fctx, scope, line)

    def _type_errors(self, tag: str, body: Any, fctx: _FileCtx, line: int, desc: str) -> bool:
        """Report the attribute-type errors ros2 launch's parser finds in an entry; True if any."""
        errors = check_entity(tag, body)
        for exc in errors:
            self._report(fctx, line, desc, exc)
        return bool(errors)

    def _sub_ctx(self, fctx: _FileCtx, scope: _Scope) -> SubstitutionContext:
        return SubstitutionContext(
            launch_file=fctx.path,
            variables=scope.variables,
            missing=scope.missing,
            used=self.used_vars,
            warn=lambda msg: self._warn(f"{fctx.display}: {msg}"),
        )

    def _warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def _enabled(self, body: Mapping[str, Any], tag: str, ctx: SubstitutionContext) -> bool:
        """Evaluate the ``if`` / ``unless`` conditions every launch action accepts."""
        enabled = True
        for key in _COMMON_KEYS:
            if key in body:
                value = _evaluate_condition(_get_str(body, key, tag), key, ctx)
                enabled = enabled and (value if key == "if" else not value)
        return enabled

    def _scan_disabled(self, tag: str, body: Any, fctx: _FileCtx, line: int) -> None:
        """Check the structure of a branch disabled by if/unless without evaluating it.

        Args declared there are remembered: passing them on the command line is not a typo.
        """
        if tag == "arg" and isinstance(body.get("name"), str):
            self.skipped_args.add(body["name"])
        if isinstance(body, list):
            children = body
        else:
            children = body.get("children") if tag == "group" else None
        if not isinstance(children, list):
            return
        for child in children:
            child_line = getattr(child, "line", line)
            try:
                child_tag, child_body = _split_entry(child)
                if self._type_errors(child_tag, child_body, fctx, child_line, _describe(child)):
                    continue
                self._scan_disabled(child_tag, child_body, fctx, child_line)
            except EntryError as exc:
                self._report(fctx, child_line, _describe(child), exc)

    # ---- tags

    def _do_arg(self, body: Mapping[str, Any], fctx: _FileCtx, scope: _Scope, line: int) -> None:
        ctx = self._sub_ctx(fctx, scope)
        name = _get_str(body, "name", "arg", required=True)
        if not _ARG_NAME.match(name):
            raise EntryError(f"'{name}' is not a valid argument name",
                             "use letters, digits, '_', '-', '.' or '/'")
        default = _get_str(body, "default", "arg")
        description = _get_str(body, "description", "arg") or ""
        self.declared.setdefault(
            name, ArgInfo(name, default, description, f"{fctx.display}:{line}")
        )
        if name in scope.variables:
            # Given on the command line or by the including file: the default does not apply,
            # exactly like DeclareLaunchArgument in ros2 launch.
            value = scope.variables[name]
        elif default is not None:
            value = substitute(default, ctx)
            scope.variables[name] = value
        else:
            scope.missing.add(name)
            if fctx.included_from:
                hint = f"pass it in the include's arg list at {fctx.included_from}"
            else:
                hint = f"pass {name}:=VALUE on the command line"
            raise EntryError(f"required launch argument '{name}' was not given", hint)
        if "choice" in body:
            choices = _get_list_of_maps(body, "choice", "arg")
            allowed = [_get_str(item, "value", "choice", required=True) for item in choices]
            if value not in allowed:
                raise EntryError(
                    f"launch argument '{name}' is {value!r}, not one of the allowed choices",
                    "use one of: " + ", ".join(allowed),
                )

    def _do_let(self, body: Mapping[str, Any], fctx: _FileCtx, scope: _Scope, line: int) -> None:
        ctx = self._sub_ctx(fctx, scope)
        # SetLaunchConfiguration.parse: both name and value take substitutions.
        name = substitute(_get_str(body, "name", "let", required=True), ctx)
        value = _get_str(body, "value", "let", required=True)
        scope.variables[name] = substitute(value, ctx)
        scope.missing.discard(name)

    def _do_push_ns(
        self, body: Mapping[str, Any], fctx: _FileCtx, scope: _Scope, line: int
    ) -> None:
        value = substitute(
            _get_str(body, "namespace", "push-ros-namespace", required=True),
            self._sub_ctx(fctx, scope),
        )
        scope.namespace = _join_namespace(scope.namespace, value)

    def _do_group(self, body: Mapping[str, Any], fctx: _FileCtx, scope: _Scope, line: int) -> None:
        ctx = self._sub_ctx(fctx, scope)
        scoped = self._group_flag(body, "scoped", fctx, line)
        forwarding = self._group_flag(body, "forwarding", fctx, line)
        if "children" not in body:
            raise EntryError(
                "group has no 'children' list",
                "write 'group: {scoped: \"true\", children: [...]}' or 'group: [...]'",
            )
        children = body["children"]
        if not isinstance(children, list):
            raise EntryError(f"group 'children' must be a list, got {_kind(children)}",
                             "write 'children: [- node: {...}, ...]'")
        # 'keep' values are evaluated before the group's scope is entered (GroupAction).
        kept: Dict[str, str] = {}
        if "keep" in body:
            for item in _get_list_of_maps(body, "keep", "group"):
                _check_keys(item, "keep", ("name", "value"))
                kept[substitute(_get_str(item, "name", "keep", required=True), ctx)] = substitute(
                    _get_str(item, "value", "keep", required=True), ctx
                )
        if scoped and not forwarding:
            # Only the 'keep' entries cross into a non-forwarding group (launch semantics).
            inner = _Scope(kept, scope.namespace, set())
        else:
            # scoped: changes stay inside; not scoped: 'keep' and everything else leak out.
            inner = scope.child() if scoped else scope
            inner.variables.update(kept)
            inner.missing.difference_update(kept)
        self._run_entries(children, fctx, inner, line)

    def _group_flag(self, body: Mapping[str, Any], key: str, fctx: _FileCtx, line: int) -> bool:
        """``scoped`` / ``forwarding`` exactly as ros2 launch reads them from YAML.

        GroupAction.parse takes a YAML boolean, or a string it neither substitutes nor
        converts: GroupAction then tests the string's truth, so every non-empty string --
        also "false" -- means true. The graph is built the same way here, with a warning.
        """
        if key not in body:
            return True
        value = body[key]
        if isinstance(value, str):
            self._warn(
                f"{fctx.display}:{line}: group {key}: {value!r} is a string, which ros2 launch "
                f"reads as {'true' if value else 'false'} whatever it says "
                f"(write {key}: true or {key}: false, without quotes)"
            )
        return bool(value)

    def _do_include(
        self, body: Mapping[str, Any], fctx: _FileCtx, scope: _Scope, line: int
    ) -> None:
        ctx = self._sub_ctx(fctx, scope)
        path = substitute(_get_str(body, "file", "include", required=True), ctx)
        ext = os.path.splitext(path)[1].lower()
        if ext not in (".yaml", ".yml"):
            raise EntryError(
                f"cannot include {path}: only YAML launch files can be included",
                "convert the included file to .launch.yaml",
            )
        if not os.path.isfile(path):
            raise EntryError(f"included file {path} does not exist",
                             "check the path; $(find-pkg-share PKG)/launch/... or $(dirname)/...")
        child = scope.child()
        for item in _get_list_of_maps(body, "arg", "include") if "arg" in body else []:
            _check_keys(item, "include arg", ("name", "value"))
            name = substitute(_get_str(item, "name", "arg", required=True), ctx)
            child.variables[name] = substitute(
                _get_str(item, "value", "arg", required=True), ctx
            )
            child.missing.discard(name)
        self._load_file(path, path, child, f"{fctx.display}:{line}")

    def _do_node(self, body: Mapping[str, Any], fctx: _FileCtx, scope: _Scope, line: int) -> None:
        ctx = self._sub_ctx(fctx, scope)
        failures: List[EntryError] = []
        skipped = False

        def attempt(func: Callable[[], Any], default: Any = None) -> Any:
            # Independent parts of a node are checked separately so that, e.g., a missing
            # package and a missing params file are both reported in one --check run.
            nonlocal skipped
            try:
                return func()
            except EntryError as exc:
                failures.append(exc)
            except SkipEntry:
                skipped = True
            return default

        package = substitute(_get_str(body, "pkg", "node", required=True), ctx)
        executable = substitute(_get_str(body, "exec", "node", required=True), ctx)
        raw_name = _get_str(body, "name", "node")
        name = None
        if raw_name is not None:
            name = attempt(lambda: _node_name(substitute(raw_name, ctx)))
        namespace = attempt(lambda: _join_namespace(
            scope.namespace, substitute(_get_str(body, "namespace", "node") or "", ctx)
        ), "/")
        output = attempt(lambda: substitute(_get_str(body, "output", "node") or "screen", ctx),
                         "screen")
        if output not in _OUTPUT_VALUES:
            failures.append(EntryError(f"output '{output}' is not supported",
                                       "use screen, log or both"))
        required = False
        on_exit = _get_str(body, "on_exit", "node")
        if on_exit is not None:
            if on_exit != "shutdown":
                failures.append(EntryError(
                    f"on_exit '{on_exit}' is not supported",
                    "use 'on_exit: shutdown' to make the node required, or drop the key"))
            required = True
        respawn = attempt(lambda: _respawn(body, ctx)) or False
        respawn_delay = attempt(lambda: _respawn_delay(body)) or 0.0
        if respawn_delay < 0.0:
            # ExecuteProcess.parse's message
            failures.append(EntryError(
                "Attribute respawn_delay of Entity node expected to be a non-negative value "
                f"but got `{respawn_delay}`", "give the seconds to wait before a restart, >= 0"))
        if respawn and required:
            # ros2 launch would both stop the graph and start the node again, racing; say which.
            failures.append(EntryError(
                "'respawn: true' and 'on_exit: shutdown' contradict each other",
                "a required node stops the graph when it exits; a respawned one is started "
                "again: keep one of the two"))
        exe_path = attempt(lambda: _resolve_executable(package, executable))
        params: List[Tuple[str, ...]] = []
        if "param" in body:
            for item in attempt(lambda: _get_list_of_maps(body, "param", "node"), []):
                params.extend(attempt(lambda: _node_param(item, ctx), []))
        remaps: List[Tuple[str, str]] = []
        if "remap" in body:
            for item in attempt(lambda: _get_list_of_maps(body, "remap", "node"), []):
                pair = attempt(lambda: _remap(item, ctx))
                if pair is not None:
                    remaps.append(pair)
        args = attempt(lambda: _split("args", _get_str(body, "args", "node"), ctx), [])
        ros_args = attempt(lambda: _split("ros_args", _get_str(body, "ros_args", "node"), ctx), [])
        for exc in failures:
            self._report(fctx, line, _describe({"node": body}), exc)
        if failures or skipped:
            raise SkipEntry()
        self.nodes.append(NodeSpec(
            name=name if name is not None else executable,
            package=package,
            executable=executable,
            exe_path=exe_path,
            namespace=namespace,
            params=params,
            remaps=remaps,
            required=required,
            respawn=respawn,
            respawn_delay=respawn_delay,
            args=args,
            ros_args=ros_args,
            output=output,
            name_given=name is not None,
            source=f"{fctx.display}:{line}",
        ))


# --------------------------------------------------------------------------- helpers


def _split_entry(entry: Any) -> Tuple[str, Any]:
    """Return ``(tag, body)`` of a launch entry after checking tag and keys."""
    if not isinstance(entry, dict) or len(entry) != 1:
        raise EntryError(
            f"each entry must be a mapping with exactly one key (the tag), got {_kind(entry)}",
            "write '- node: {...}', '- arg: {...}', '- include: {...}', ...",
        )
    tag, body = next(iter(entry.items()))
    if tag not in _SUPPORTED_TAGS:
        what = "is unknown"
        if tag in _ROS_TAGS_NOT_SUPPORTED:
            what = "is not supported by rlstack_launch"
        raise EntryError(f"tag '{tag}' {what}", "supported tags: " + ", ".join(_SUPPORTED_TAGS))
    if tag == "group" and isinstance(body, list):
        return tag, body
    if not isinstance(body, dict):
        raise EntryError(
            f"'{tag}' must hold a mapping of keys, got {_kind(body)}",
            f"write e.g. '- {tag}: {{name: ...}}'",
        )
    _check_keys(body, tag, _KEYS_BY_TAG[tag])
    return tag, body


def _describe(entry: Any) -> str:
    """Short description of an entry for messages: ``node 'talker'``, ``arg 'rate_hz'``."""
    if isinstance(entry, dict) and len(entry) == 1:
        tag, body = next(iter(entry.items()))
        if isinstance(body, dict):
            label = body.get("name") if tag != "include" else body.get("file")
            if not isinstance(label, str) and tag == "node":
                label = body.get("exec")
            if isinstance(label, str):
                return f"{tag} '{label}'"
        return str(tag)
    return "entry"


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _check_keys(body: Mapping[str, Any], tag: str, allowed: Sequence[str]) -> None:
    for key in body:
        if key not in allowed:
            raise EntryError(
                f"unknown key '{key}' in {tag}",
                "supported keys: " + ", ".join(allowed),
            )


def _respawn(body: Mapping[str, Any], ctx: SubstitutionContext) -> bool:
    """``respawn``: a string (ExecuteProcess.parse), substituted, then read as a bool as
    ExecuteLocal.prepare does (perform_typed_substitution(..., bool))."""
    text = _get_str(body, "respawn", "node")
    if text is None:
        return False
    return typed_bool(substitute(text, ctx), "respawn")


def _respawn_delay(body: Mapping[str, Any]) -> float:
    """``respawn_delay``: ExecuteProcess.parse asks for a float and compares it with 0.0.

    A YAML string passes upstream's type check but then fails that comparison, so only a
    YAML float works in ros2 launch (an int is refused by the type check).
    """
    if "respawn_delay" not in body:
        return 0.0
    value = body["respawn_delay"]
    if isinstance(value, str):
        raise EntryError(
            "'respawn_delay' is a string: ros2 launch fails on it with \"TypeError: '<' not "
            "supported between instances of 'str' and 'float'\"",
            "write a number with a decimal point and no quotes, e.g. respawn_delay: 2.0")
    if not isinstance(value, float) or isinstance(value, bool):
        raise type_error("respawn_delay", "node", float, value)
    return value


def _get_str(
    body: Mapping[str, Any], key: str, tag: str, required: bool = False
) -> Optional[str]:
    """Return a string attribute; like launch_yaml, non-string YAML scalars are rejected."""
    if key not in body:
        if required:
            raise missing_error(key, tag)
        return None
    value = body[key]
    if isinstance(value, str):
        return value
    raise type_error(key, tag, str, value)


def _get_list_of_maps(body: Mapping[str, Any], key: str, tag: str) -> List[Mapping[str, Any]]:
    value = body[key]
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise EntryError(
            f"'{key}' of {tag} must be a list of mappings, got {_kind(value)}",
            f"write '{key}: [{{...}}, {{...}}]'",
        )
    return value


def _evaluate_condition(text: str, key: str, ctx: SubstitutionContext) -> bool:
    """Evaluate like launch's IfCondition: true/1 or false/0, case-insensitive."""
    value = substitute(text, ctx).strip().lower()
    if value in ("true", "1"):
        return True
    if value in ("false", "0"):
        return False
    raise EntryError(f"'{key}' evaluated to {value!r}, not a boolean",
                     "it must be true, false, 1 or 0")


def _node_name(name: str) -> str:
    if not _TOKEN.match(name):
        raise EntryError(f"'{name}' is not a valid node name",
                         "node names are letters, digits and '_', not starting with a digit")
    return name


def _join_namespace(base: str, namespace: str) -> str:
    """Combine a pushed namespace with a (relative or absolute) namespace, validated."""
    if namespace.startswith("/"):
        joined = namespace
    elif namespace:
        joined = base.rstrip("/") + "/" + namespace
    else:
        joined = base
    parts = [part for part in joined.split("/") if part]
    for part in parts:
        if not _TOKEN.match(part):
            raise EntryError(f"'{namespace}' is not a valid namespace",
                             "namespace segments are letters, digits and '_', separated by '/'")
    return "/" + "/".join(parts)


def _resolve_executable(package: str, executable: str) -> str:
    """Return ``<prefix>/lib/<package>/<executable>``, checking it exists and is executable."""
    prefix = package_prefix(package)
    libdir = os.path.join(prefix, "lib", package)
    path = os.path.join(libdir, executable)
    if not os.path.isfile(path):
        available = sorted(
            f for f in os.listdir(libdir) if os.path.isfile(os.path.join(libdir, f))
        ) if os.path.isdir(libdir) else []
        listing = f"available: {', '.join(available)}" if available else f"{libdir} has none"
        raise EntryError(
            f"executable '{executable}' not found in package '{package}': no file {path}",
            f"check 'exec' or the package's console_scripts; {listing}",
        )
    if not os.access(path, os.X_OK):
        raise EntryError(f"{path} is not executable", f"chmod +x {path} or fix the install rule")
    return path


def _node_param(item: Mapping[str, Any], ctx: SubstitutionContext) -> List[Tuple[str, ...]]:
    """One ``param`` list item: a params file or a (possibly nested) single parameter."""
    if "from" in item:
        _check_keys(item, "param", ("from",))
        path = os.path.abspath(substitute(_get_str(item, "from", "param", required=True), ctx))
        validate_params_file(path)
        return [("file", path)]
    if "name" not in item:
        raise EntryError("param entry has neither 'from' nor 'name'",
                         "write {from: FILE} or {name: NAME, value: VALUE}")
    return _named_param(item, ctx, prefix="")


def _named_param(
    item: Mapping[str, Any], ctx: SubstitutionContext, prefix: str
) -> List[Tuple[str, ...]]:
    _check_keys(item, "param", ("name", "value", "param"))
    name = prefix + substitute(_get_str(item, "name", "param", required=True), ctx)
    if "value" in item and "param" in item:
        raise EntryError(f"param '{name}' has both 'value' and nested 'param'", "keep one")
    if "param" in item:
        # Nested params are launch_ros's way of writing dotted names (a: {b: 1} -> a.b).
        out: List[Tuple[str, ...]] = []
        for child in _get_list_of_maps(item, "param", "param"):
            out.extend(_named_param(child, ctx, prefix=name + "."))
        return out
    if "value" not in item:
        raise EntryError(f"param '{name}' has no 'value'", "add value: ...")
    return [("param", name, _param_value(name, item["value"], ctx))]


def _param_value(name: str, value: Any, ctx: SubstitutionContext) -> str:
    """Render a param value for ``-p name:=value`` (rcl parses it as YAML)."""
    if isinstance(value, str):
        text = substitute(value, ctx)
        # rcl cannot parse '-p name:=' (nothing after ':='); ros2 launch passes an empty string
        # through its params file, where it stays a string: say so in YAML.
        return text if text else "''"
    if isinstance(value, list):
        return "[" + ", ".join(_yaml_scalar(name, v) for v in value) + "]"
    return _yaml_scalar(name, value)


def _yaml_scalar(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # quoted, so '1' inside a list stays a string
    raise EntryError(f"param '{name}' has an unsupported value {value!r}",
                     "use a string, number, boolean or a list of them")


def _remap(item: Mapping[str, Any], ctx: SubstitutionContext) -> Tuple[str, str]:
    _check_keys(item, "remap", ("from", "to"))
    src = substitute(_get_str(item, "from", "remap", required=True), ctx)
    dst = substitute(_get_str(item, "to", "remap", required=True), ctx)
    if not src or not dst:
        raise EntryError("remap 'from' and 'to' must not be empty", "give both topic names")
    return src, dst


def _split(key: str, text: Optional[str], ctx: SubstitutionContext) -> List[str]:
    if text is None:
        return []
    try:
        return shlex.split(substitute(text, ctx))
    except ValueError as exc:
        raise EntryError(f"cannot split '{key}': {exc}", "check the quotes") from None


def _assign_labels(nodes: List[NodeSpec]) -> None:
    """Give every node a unique, short output prefix (name, else ns/name, else name-N)."""
    by_name: Dict[str, int] = {}
    for spec in nodes:
        by_name[spec.name] = by_name.get(spec.name, 0) + 1
    used: Set[str] = set()
    for spec in nodes:
        label = spec.name if by_name[spec.name] == 1 else spec.fqn.lstrip("/")
        base, counter = label, 2
        while label in used:
            label = f"{base}-{counter}"
            counter += 1
        used.add(label)
        spec.label = label
