"""Validation of ROS 2 parameter YAML files (the files given to ``--params-file``).

The node itself parses these files with rcl's YAML parser at startup; a bad file makes it
die with an error that only shows up in that node's output. Checking the structure here
turns that into one line, naming the file, before anything is started.

The accepted layout is the one rcl accepts::

    talker:                 # node name, /ns/name, /** or a wildcard pattern
      ros__parameters:
        rate_hz: 10.0
        nested: {a: 1}      # nested mappings are dotted names (nested.a)
    /robot:                 # a namespace may also nest node entries
      driver:
        ros__parameters: {port: /dev/ttyUSB0}
"""

from __future__ import annotations

import datetime
from typing import Any, Dict, List

import yaml

from .errors import EntryError

# PyYAML turns unquoted dates into date objects; rcl keeps them as strings, so allow them.
_SCALARS = (bool, int, float, str, datetime.date)


def load_params_file(path: str) -> Dict[str, Any]:
    """Read and validate a params file, returning its content.

    Raises:
        EntryError: the file is missing, unreadable, not YAML or not a ROS 2 params file.
            The message names the file and what is wrong.
    """
    try:
        with open(path, "r", encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise EntryError(
            f"params file {path} does not exist", "check the path in the 'from' entry"
        ) from None
    except IsADirectoryError:
        raise EntryError(
            f"params file {path} is a directory", "point 'from' at a .yaml file"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EntryError(
            f"cannot read params file {path}: {exc}", "check its permissions"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise EntryError(
            f"params file {path} is not valid YAML: {_yaml_reason(exc)}",
            "fix the YAML syntax",
        ) from None
    if data is None:
        raise EntryError(
            f"params file {path} is empty",
            "add 'NODE_NAME: {ros__parameters: {...}}' or drop the file",
        )
    if not isinstance(data, dict):
        raise EntryError(
            f"params file {path} must be a mapping of node names, got a {_kind(data)}",
            "use 'NODE_NAME: {ros__parameters: {...}}' (or '/**' for every node)",
        )
    problems: List[str] = []
    for key, value in data.items():
        _check_node_entry(str(key), key, value, problems)
    if problems:
        raise EntryError(f"params file {path}: {problems[0]}", _HINT)
    return data


_HINT = "each node entry is 'NODE_NAME: {ros__parameters: {name: value, ...}}'"


def validate_params_file(path: str) -> None:
    """Raise :class:`EntryError` if ``path`` is not a valid ROS 2 params file."""
    load_params_file(path)


def _check_node_entry(where: str, key: Any, value: Any, problems: List[str]) -> None:
    """Check one node (or namespace) entry, appending problems found."""
    if not isinstance(key, str) or not key:
        problems.append(f"node key {key!r} must be a non-empty string")
        return
    if not isinstance(value, dict):
        problems.append(
            f"entry '{where}' must be a mapping holding 'ros__parameters', got {_kind(value)}"
        )
        return
    if "ros__parameters" in value:
        params = value["ros__parameters"]
        if not isinstance(params, dict):
            problems.append(
                f"'{where}.ros__parameters' must be a mapping of parameter names to values, "
                f"got {_kind(params)}"
            )
            return
        for other in value:
            if other != "ros__parameters":
                problems.append(f"unexpected key '{other}' next to 'ros__parameters' in '{where}'")
                return
        _check_params(where, params, problems)
        return
    for other in value:
        if isinstance(other, str) and other.replace("_", "").lower() == "rosparameters":
            problems.append(
                f"entry '{where}' has '{other}' instead of 'ros__parameters' (two underscores)"
            )
            return
    if value and all(isinstance(child, dict) for child in value.values()):
        # A namespace holding node entries (rcl allows 'ns: {node: {ros__parameters: ...}}').
        for child_key, child in value.items():
            _check_node_entry(f"{where}/{child_key}", child_key, child, problems)
        return
    found = ", ".join(repr(k) for k in value) or "nothing"
    problems.append(f"entry '{where}' has no 'ros__parameters' mapping (found {found})")


def _check_params(
    where: str, params: Dict[Any, Any], problems: List[str], prefix: str = ""
) -> None:
    """Check parameter values: scalars, homogeneous scalar lists, or nested mappings.

    ``prefix`` is the dotted path of an enclosing mapping (nested mappings are how ROS 2
    params files spell dotted parameter names).
    """
    for name, value in params.items():
        if not isinstance(name, str):
            problems.append(f"parameter name {name!r} in '{where}' must be a string")
            return
        dotted = f"{prefix}{name}"
        label = f"{where}: {dotted}"
        if isinstance(value, dict):
            _check_params(where, value, problems, prefix=f"{dotted}.")
        elif isinstance(value, list):
            kinds = {_scalar_kind(v) for v in value}
            if None in kinds:
                problems.append(f"parameter '{label}' is a list that holds lists or mappings")
            elif len(kinds) > 1:
                problems.append(
                    f"parameter '{label}' mixes types in one list ({', '.join(sorted(kinds))})"
                )
        elif value is None:
            problems.append(f"parameter '{label}' has no value")
        elif not isinstance(value, _SCALARS):
            problems.append(f"parameter '{label}' has an unsupported value {value!r}")
        if problems:
            # One problem per file is enough to point the user at it.
            return


def _scalar_kind(value: Any) -> Any:
    """Return the rcl array type name for a list element, or None if not a scalar."""
    # bool first: bool is a subclass of int in Python but a separate type in ROS.
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "double"
    if isinstance(value, (str, datetime.date)):
        return "string"
    return None


def _kind(value: Any) -> str:
    """Human name of a YAML value's type."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return f"string {value!r}"
    return type(value).__name__


def _yaml_reason(exc: yaml.YAMLError) -> str:
    """One-line description of a PyYAML error, with the line number when known."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return problem
