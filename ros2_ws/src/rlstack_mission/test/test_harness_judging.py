"""The evaluator's view of a fetch (rlstack_mission.harness): where the fetched object came down
before the put-down, from its ground-truth track."""

from __future__ import annotations

from rlstack_mission.harness import fall_before_drop

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
