"""Parameter table <-> params YAML <-> docs, and a short closed-loop evaluation in home (PyBullet)."""

import math
import pathlib

import pytest
import yaml

from rlstack_nav.parameters import PARAMS, _check_table, nav_params


def repo_file(*parts):
    for parent in pathlib.Path(__file__).resolve().parents:
        path = parent.joinpath(*parts)
        if path.exists():
            return path
    pytest.skip(f"{'/'.join(parts)} not found above this package")


def test_every_core_parameter_is_a_node_parameter():
    _check_table()
    assert len({p.name for p in PARAMS}) == len(PARAMS)
    for p in PARAMS:
        assert p.description, p.name
        if isinstance(p.default, (int, float)) and not isinstance(p.default, bool):
            assert p.min_value is not None and p.min_value <= p.default <= p.max_value, p.name
            assert p.unit or p.name in ("cost_weight", "proximity_scaling_gain", "goal_precision", "max_replans",
                                      "final_rotation_hold"), p.name


def test_params_file_sets_every_parameter_to_its_default():
    data = yaml.safe_load(repo_file("launch", "params", "nav_controller.yaml").read_text())
    values = data["/**"]["ros__parameters"]
    assert set(values) == {p.name for p in PARAMS}
    for p in PARAMS:
        assert values[p.name] == p.default and type(values[p.name]) is type(p.default), p.name
    nav_params(values)


def test_docs_describe_every_parameter():
    text = repo_file("docs", "reference", "navigation.md").read_text()
    missing = [p.name for p in PARAMS if f"`{p.name}`" not in text]
    assert not missing, f"docs/reference/navigation.md lacks {missing}"


def test_bad_values_are_refused():
    with pytest.raises(ValueError, match="inflation_radius"):
        nav_params({"robot_radius": 1.0, "inflation_radius": 0.5})
    with pytest.raises(ValueError):
        nav_params({"min_lookahead_dist": 2.0, "max_lookahead_dist": 1.0})


def test_short_closed_loop_evaluation_in_home():
    pytest.importorskip("pybullet")
    pytest.importorskip("sim_bridges")
    from rlstack_nav.evaluate import evaluate

    report = evaluate(goals=3, seed=7, depth_rate_hz=2.0, progress=False)
    s = report["summary"]
    assert s["succeeded"] == 3, report["outcomes"]
    assert s["collisions"] == 0
    assert s["max_xy_error_cm"] <= 5.0 and s["max_yaw_error_rad"] <= 0.1
    assert s["min_footprint_clearance_m"] > 0.0
    assert math.isfinite(s["time_over_ideal_mean"])
