"""The evaluator's view of a fetch (rlstack_mission.harness): where the fetched object came down
before the put-down, from its ground-truth track; how far the held grasp target lay from the object."""

from __future__ import annotations

import math

import pytest

from rlstack_mission.harness import fall_before_drop, held_target_error

PHASES = [(0.0, "LOCATE", ""), (4.0, "GRASP", "lifting"), (8.0, "RETURN", "carrying to (0.40, 0.60)"),
          (20.0, "DROP", "putting it down")]


def track(fall_at: float, start_z: float = 0.77) -> list:
    """A cube on a table (or the floor: ``start_z``) lifted at 6 s and lying on the floor from
    ``fall_at``; the base drives along x at 0.2 m/s, turning at 0.5 rad/s."""
    out = []
    for k in range(0, 125):
        t = 0.2 * k
        z = start_z if t < 6.0 else 0.68
        if t >= fall_at:
            z = 0.025
        out.append((t, 1.0 + 0.2 * t, 2.0, z, 0.2 * t, 0.0, 0.5 * t))
    return out


def test_a_fall_on_the_way_is_found_with_its_phase_and_the_base_motion():
    fell = fall_before_drop(track(fall_at=12.0), PHASES)
    assert fell["phase"] == "RETURN" and fell["t_s"] == 12.0 and fell["at"][2] < 0.1
    assert abs(fell["base_speed_mps"] - 0.2) < 1e-6 and abs(fell["base_turn_rate_radps"] - 0.5) < 1e-6


def test_the_put_down_itself_and_a_floor_start_are_not_falls():
    assert fall_before_drop(track(fall_at=21.0), PHASES) is None           # on the floor after DROP began
    floor = [(t, x, y, 0.025 if t < 6.0 else z, *b) for t, x, y, z, *b in track(fall_at=99.0, start_z=0.025)]
    assert fall_before_drop(floor, PHASES) is None                         # lying there before the lift: no fall
    assert fall_before_drop([], PHASES) is None


def test_the_held_target_is_judged_in_the_true_base_link():
    """A base at (1, 2) facing +y (yaw 90 deg), base_link 8 cm up; the object 0.5 m ahead of it and
    turned 100 deg in the world (10 deg in base_link): a target held 1 cm further ahead, 2 mm to the
    left, 3 mm low and at yaw 12 deg is off by (+10, +2, -3) mm and +2 deg; a yaw 90 deg round
    counts the same (the fingers square to any side)."""
    base = (1.0, 2.0, 0.08, math.pi / 2)
    obj = (1.0, 2.5, 0.525, math.radians(100.0))
    err = held_target_error(base, obj, (0.51, 0.002, 0.442, math.radians(12.0)))
    assert err["object_in_base_link_m"] == pytest.approx([0.5, 0.0], abs=1e-9)
    assert (err["dx_mm"], err["dy_mm"], err["dz_mm"]) == pytest.approx((10.0, 2.0, -3.0), abs=0.05)
    assert err["xy_mm"] == pytest.approx(math.hypot(10.0, 2.0), abs=0.05)
    assert err["yaw_deg"] == pytest.approx(2.0, abs=0.05)
    turned = held_target_error(base, obj, (0.51, 0.002, 0.442, math.radians(12.0 - 90.0)))
    assert turned["yaw_deg"] == pytest.approx(2.0, abs=0.05)


def test_an_object_is_delivered_on_the_floor_near_the_dropoff():
    """The evaluator's one judgement of a delivery (the fetch evaluation, the soak and fault injection)."""
    from rlstack_mission.harness import DROPOFF_TOLERANCE, on_dropoff
    dropoff = (-0.5, 0.0, 3.14159)
    assert on_dropoff((-0.5 + DROPOFF_TOLERANCE - 0.01, 0.0, 0.02), dropoff)
    assert not on_dropoff((-0.5 + DROPOFF_TOLERANCE + 0.01, 0.0, 0.02), dropoff)   # too far
    assert not on_dropoff((-0.5, 0.0, 0.7), dropoff)                               # still in the hand
    assert not on_dropoff((math.nan, math.nan, math.nan), dropoff)                 # not in the scene
