"""The attribute types ``ros2 launch`` accepts in a YAML launch file, checked as it checks them.

``launch_yaml`` does no type coercion: ``Entity.get_attr(name, data_type=T)`` accepts a YAML
value that is an instance of ``T`` *or* a ``str`` (a string may hold substitutions), and
refuses anything else with::

    Attribute 'respawn' of Entity 'node' expected to be of type '<class 'str'>', got '<class 'bool'>'

(``launch_yaml/entity.py``, ``Entity.get_attr``; ``launch/utilities/type_utils.py``,
``is_instance_of``). A list of sub-entities (``param``, ``remap``, ...) must be a list whose
first item is a mapping. The tables below say, for every entity and attribute this runner
supports, which ``data_type`` upstream's ``parse()`` asks for; :func:`check_entity` applies
them, with upstream's messages, to an entity *before* anything is evaluated -- upstream parses
every entry of a file, also those an ``if``/``unless`` disables, before running any.

Pure Python; no ``launch`` import.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from .errors import EntryError

#: Marker for ``data_type=List[Entity]``: a list of mappings (sub-entities).
ENTITIES = "entities"
#: Marker for ``data_type=None``: any scalar, or a uniform list of scalars (strings mix in).
ANY_VALUE = "any"

# Upstream's `data_type` per attribute, in the order upstream's `parse()` reads them.
# `if` / `unless`: launch/action.py, Action.parse (get_attr('if'), get_attr('unless')).
_CONDITIONS: Tuple[Tuple[str, Any], ...] = (("if", str), ("unless", str))

TYPES: Dict[str, Tuple[Tuple[str, Any], ...]] = {
    # launch/actions/declare_launch_argument.py, DeclareLaunchArgument.parse
    "arg": _CONDITIONS + (
        ("name", str), ("default", str), ("description", str), ("choice", ENTITIES),
    ),
    # launch/actions/set_launch_configuration.py, SetLaunchConfiguration.parse
    "let": (("name", str), ("value", str)) + _CONDITIONS,
    # launch_ros/actions/node.py, Node.parse, which first runs
    # launch/actions/execute_process.py, ExecuteProcess.parse(ignore=['cmd'])
    "node": _CONDITIONS + (
        ("name", str), ("on_exit", str), ("output", str), ("respawn", str),
        ("respawn_delay", float),
        ("args", str), ("ros_args", str), ("pkg", str), ("exec", str), ("namespace", str),
        ("remap", ENTITIES), ("param", ENTITIES),
    ),
    # launch/actions/include_launch_description.py, IncludeLaunchDescription.parse
    "include": _CONDITIONS + (("file", str), ("arg", ENTITIES)),
    # launch/actions/group_action.py, GroupAction.parse
    "group": _CONDITIONS + (("scoped", bool), ("forwarding", bool), ("keep", ENTITIES)),
    # launch_ros/actions/push_ros_namespace.py, PushROSNamespace.parse
    "push-ros-namespace": _CONDITIONS + (("namespace", str),),
    "push_ros_namespace": _CONDITIONS + (("namespace", str),),
}

# Sub-entities (the items of an ENTITIES attribute), keyed by (entity, attribute).
SUB_TYPES: Dict[Tuple[str, str], Tuple[Tuple[str, Any], ...]] = {
    # DeclareLaunchArgument.parse: choice.get_attr('value')
    ("arg", "choice"): (("value", str),),
    # IncludeLaunchDescription.parse: e.get_attr('name'), e.get_attr('value')
    ("include", "arg"): (("name", str), ("value", str)),
    # GroupAction.parse: e.get_attr('name'), e.get_attr('value')
    ("group", "keep"): (("name", str), ("value", str)),
    # Node.parse: remap.get_attr('from'), remap.get_attr('to')
    ("node", "remap"): (("from", str), ("to", str)),
    # Node.parse_nested_parameters: param.get_attr('from'), get_attr('name'),
    # get_attr('value', data_type=None), get_attr('param', data_type=List[Entity])
    ("node", "param"): (
        ("from", str), ("name", str), ("value", ANY_VALUE), ("param", ENTITIES),
    ),
    ("param", "param"): (("name", str), ("value", ANY_VALUE), ("param", ENTITIES)),
}
# Sub-entity attributes upstream reads without `optional=True` (missing: AttributeError).
_REQUIRED_SUB = {
    ("arg", "choice"): ("value",),
    ("include", "arg"): ("name", "value"),
    ("group", "keep"): ("name", "value"),
    ("node", "remap"): ("from", "to"),
    ("param", "param"): ("name",),
}

_SCALARS = (int, float, bool, str)


def type_name(data_type: Any) -> str:
    """``str(data_type)`` as upstream's message prints it (``<class 'str'>``, ``None``)."""
    if data_type is ANY_VALUE:
        return "None"
    return str(data_type)


def type_error(key: str, entity: str, data_type: Any, value: Any) -> EntryError:
    """Upstream's message for a value of the wrong type, with what to write instead."""
    # The loader's line-remembering mapping is a dict to the user (and to launch_yaml).
    got = dict if isinstance(value, dict) else type(value)
    what = (f"Attribute '{key}' of Entity '{entity}' expected to be of type "
            f"'{type_name(data_type)}', got '{got}'")
    if data_type is str and isinstance(value, (bool, int, float)):
        literal = str(value).lower() if isinstance(value, bool) else str(value)
        hint = f"quote it: {key}: \"{literal}\""
    elif data_type is float and isinstance(value, int) and not isinstance(value, bool):
        hint = f"write it with a decimal point: {key}: {value}.0"
    elif data_type is bool:
        hint = f"write {key}: true or {key}: false"
    elif data_type is ANY_VALUE:
        hint = "a string, number or boolean, or a list of one of those (strings may mix in)"
    else:
        hint = f"write {key}: \"...\""
    return EntryError(what, hint)


def missing_error(key: str, entity: str) -> EntryError:
    """Upstream's message for a required attribute that is absent."""
    return EntryError(f"Can not find attribute '{key}' in Entity '{entity}'", f"add '{key}: ...'")


def is_valid_value(value: Any) -> bool:
    """``is_instance_of_valid_type(value, can_be_str=True)`` of launch/utilities/type_utils.py.

    A scalar (int, float, bool, str), or a list whose non-string items share one scalar type
    (the type of the first non-string item; ``bool`` counts as ``int`` after an int, as
    ``isinstance`` has it). An empty list is fine.
    """
    if isinstance(value, list):
        if not value:
            return True
        member = next((type(item) for item in value if type(item) is not str), str)
        if member not in _SCALARS:
            return False
        return all(isinstance(item, (member, str)) for item in value)
    return isinstance(value, _SCALARS)


def is_uniform(value: Any) -> bool:
    """``parse_if_substitutions``: a list's items are of one type, counting a plain string as
    ``str`` and a string with a substitution as no type (it is resolved later)."""
    if not isinstance(value, list):
        return True
    kinds = {type(item) for item in value if not (isinstance(item, str) and "$(" in item)}
    return len(kinds) <= 1


def is_instance(value: Any, data_type: Any) -> bool:
    """``is_instance_of(value, data_type, can_be_str=True)``: the type or a string."""
    if data_type is ANY_VALUE:
        return is_valid_value(value)
    return isinstance(value, (str, data_type))


def _check_entities(key: str, entity: str, value: Any) -> Optional[EntryError]:
    """``get_attr(key, data_type=List[Entity])``: a list whose items are mappings."""
    if not isinstance(value, list):
        return EntryError(
            f"Attribute '{key}' of Entity '{entity}' expected to be a list of dictionaries.",
            f"write '{key}: [{{...}}, {{...}}]'")
    if not value:
        # Upstream reads value[0] before anything else and fails with an IndexError.
        return EntryError(
            f"Attribute '{key}' of Entity '{entity}' is an empty list (ros2 launch fails on it "
            f"with 'IndexError: list index out of range')",
            f"remove '{key}' or give it at least one item")
    if not all(isinstance(item, dict) for item in value):
        return EntryError(
            f"Attribute '{key}' of Entity '{entity}' expected to be a list of dictionaries.",
            f"write each item of '{key}' as a mapping {{...}}")
    return None


def _check_attrs(
    body: Mapping[str, Any], entity: str, rules: Tuple[Tuple[str, Any], ...],
    errors: List[EntryError],
) -> None:
    for key, data_type in rules:
        if key not in body:
            continue
        value = body[key]
        if data_type is ENTITIES:
            problem = _check_entities(key, entity, value)
            if problem is not None:
                errors.append(problem)
                continue
            # The items are entities named after the attribute (launch_yaml: Entity(child, name)).
            sub_key = (entity, key)
            for item in value:
                before = len(errors)
                for required in _REQUIRED_SUB.get(sub_key, ()):
                    if required not in item:
                        errors.append(missing_error(required, key))
                _check_attrs(item, key, SUB_TYPES.get(sub_key, ()), errors)
                if key == "param" and len(errors) == before:
                    # Upstream stops at an item's first error; the structure comes after.
                    _check_param(item, errors)
        elif not is_instance(value, data_type):
            errors.append(type_error(key, entity, data_type, value))
        elif data_type is ANY_VALUE and not is_uniform(value):
            # launch/frontend/parse_substitution.py, parse_if_substitutions (Node.parse_nested_
            # parameters runs it on every value)
            errors.append(EntryError("The result is a non-uniform list",
                                     "give the list's items one type: all strings, all "
                                     "numbers or all booleans"))


def _check_param(item: Mapping[str, Any], errors: List[EntryError]) -> None:
    """The structure rules of launch_ros/actions/node.py, Node.parse_nested_parameters."""
    if "from" in item and "name" in item:
        errors.append(EntryError("name and from attributes are mutually exclusive",
                                 "write {from: FILE} or {name: NAME, value: VALUE}"))
    elif "from" not in item and "name" not in item:
        errors.append(EntryError("param Entity should have name or from attribute",
                                 "write {from: FILE} or {name: NAME, value: VALUE}"))
    elif "name" in item:
        has_value = item.get("value") is not None
        nested = item.get("param")
        if has_value and nested:
            errors.append(EntryError(
                "nested parameters and value attributes are mutually exclusive", "keep one"))
        elif not has_value and not nested:
            errors.append(EntryError("either a value attribute or nested params are needed",
                                     "add value: ... or param: [...]"))


def check_entity(tag: str, body: Any) -> List[EntryError]:
    """Every attribute-type error upstream's parser finds in one entity (its own attributes
    and its sub-entities; group children are entities of their own and checked as such)."""
    if tag not in TYPES or not isinstance(body, dict):
        return []
    errors: List[EntryError] = []
    _check_attrs(body, tag, TYPES[tag], errors)
    if "if" in body and "unless" in body:
        # launch/action.py, Action.parse
        errors.append(EntryError(
            "if and unless conditions can't be used simultaneously", "keep one of the two"))
    return errors


# Words upstream's `perform_typed_substitution(..., bool)` reads as booleans: '1' and '0',
# then whatever `yaml.safe_load` reads as a bool (YAML 1.1: true/True/TRUE, yes, on, ...).
def typed_bool(text: str, key: str) -> bool:
    """``coerce_to_type(text, bool)`` of launch/utilities/type_utils.py (used for ``respawn``).

    Raises:
        EntryError: with upstream's ``Cannot convert value 'x' to '<class 'bool'>'``.
    """
    import yaml

    word = {"1": "true", "0": "false"}.get(text, text)
    output: Any = word
    if word:
        try:
            output = yaml.safe_load(word)
        except yaml.YAMLError:
            output = None
    if isinstance(output, bool):
        return output
    raise EntryError(f"Cannot convert value '{text}' to '{bool}'",
                     f"'{key}' must evaluate to true or false (also 1/0, yes/no, on/off)")
