"""param_table: a table declares with descriptors, values come back typed, params files are checked."""

import pytest
import rclpy
from rclpy.exceptions import InvalidParameterValueException
from rclpy.parameter import Parameter

from rlstack_common.param_table import (
    Param,
    check_table,
    check_values,
    declare_all,
    descriptor,
    differences,
    load_params_yaml,
)

TABLE = [
    Param("rate_hz", 10.0, "Publish rate", 0.1, 100.0, unit="Hz"),
    Param("count", 3, "How many", 1, 10),
    Param("mode", "a", "Mode", constraints="one of: a, b"),
    Param("topics", ["/x"], "Topics"),
    Param("enabled", True, "On or off", read_only=True),
]


@pytest.fixture
def make_node():
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=0)
    nodes = []

    def factory(**overrides):
        node = rclpy.create_node("param_table_test", context=context, start_parameter_services=False,
                                 parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()])
        nodes.append(node)
        return node

    yield factory
    for node in nodes:
        node.destroy_node()
    rclpy.shutdown(context=context)


def test_declare_all_returns_the_values_and_sets_descriptors(make_node):
    node = make_node(count=7)
    v = declare_all(node, TABLE)
    assert v == {"rate_hz": 10.0, "count": 7, "mode": "a", "topics": ["/x"], "enabled": True}
    assert v.count == 7 and v["rate_hz"] == 10.0
    rate, count, mode, _, enabled = node.describe_parameters([p.name for p in TABLE])
    assert rate.description == "Publish rate [Hz]"
    assert (rate.floating_point_range[0].from_value, rate.floating_point_range[0].to_value) == (0.1, 100.0)
    assert (count.integer_range[0].from_value, count.integer_range[0].to_value) == (1, 10)
    assert mode.additional_constraints == "one of: a, b" and not mode.floating_point_range
    assert enabled.read_only


def test_out_of_range_override_is_refused(make_node):
    with pytest.raises(InvalidParameterValueException):
        declare_all(make_node(rate_hz=500.0), TABLE)


def test_bad_tables_are_refused():
    with pytest.raises(ValueError, match="both min_value and max_value"):
        Param("a", 1.0, "a", 0.0)
    with pytest.raises(ValueError, match="int or float default"):
        Param("b", "text", "b", 0, 1)
    with pytest.raises(ValueError, match="outside"):
        Param("c", 5.0, "c", 0.0, 1.0)
    problems = check_table([Param("x", 1, "x", 0, 2), Param("x", 2, "again", 0, 2), Param("y", [], "empty")])
    assert any("declared twice" in p for p in problems) and any("array default" in p for p in problems)
    assert "[m]" in descriptor(Param("d", 1.0, "d", 0.0, 2.0, unit="m")).description


def test_values_are_checked_by_name_type_and_range():
    assert check_values(TABLE, {"rate_hz": 20.0, "count": 2, "use_sim_time": True}) == []
    problems = check_values(TABLE, {"rate_hz": 20, "count": 11, "nope": 1, "topics": [1], "enabled": "yes"})
    text = "\n".join(problems)
    assert "'rate_hz': 20 is integer, the parameter is double" in text
    assert "'count': 11 outside 1 .. 10" in text
    assert "'nope' is not a parameter" in text
    assert "'topics': elements [1] are not string" in text
    assert "'enabled': 'yes' is string" in text
    assert differences(TABLE, {"rate_hz": 10.0, "count": 4}) == {"count": (4, 3)}


def test_params_file_sections(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("/**:\n  ros__parameters:\n    rate_hz: 5.0\nother:\n  ros__parameters: {}\n")
    assert load_params_yaml(str(path)) == {"/**": {"rate_hz": 5.0}, "other": {}}
