"""Unit tests of the bridge's configuration checks and schedules."""

import pytest

from rlstack_sim.config import MODES, ConfigError, RateMeter, check_choice, every_n_steps, steps_per_control


def test_check_choice_lists_valid_values():
    assert check_choice("mode", "fast", MODES) == "fast"
    with pytest.raises(ConfigError, match="unknown scene 'kitchen'; valid scenes: a, b"):
        check_choice("scene", "kitchen", ["a", "b"])


def test_control_rate_must_divide_physics_rate():
    assert steps_per_control(240.0, 60.0) == 4
    assert steps_per_control(240.0, 240.0) == 1
    with pytest.raises(ConfigError, match="does not divide"):
        steps_per_control(240.0, 50.0)
    with pytest.raises(ConfigError):
        steps_per_control(240.0, 480.0)


def test_every_n_steps():
    assert every_n_steps(60.0, 60.0) == 1
    assert every_n_steps(60.0, 15.0) == 4
    assert every_n_steps(60.0, 1000.0) == 1  # capped at one per control step
    assert every_n_steps(60.0, 0.0) is None


def test_rate_meter():
    m = RateMeter()
    assert m.sample(0.0) == 0.0
    m.tick(30)
    assert m.sample(2.0) == pytest.approx(15.0)
    assert m.sample(3.0) == 0.0
