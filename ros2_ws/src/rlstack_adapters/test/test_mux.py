"""VelocityMux (pure core): priority, timeouts, lock, idle stop, bad input and bad configuration."""

import math

import pytest

from rlstack_adapters.mux import ZERO, MuxConfigError, MuxInput, MuxLock, VelocityMux, build_inputs

V1 = ((0.1, 0.0, 0.0), (0.0, 0.0, 0.2))
V2 = ((0.3, 0.0, 0.0), (0.0, 0.0, -0.1))


def mux(**kw):
    inputs = [MuxInput("mission", "/cmd_vel_mission", 20, 0.5), MuxInput("navigation", "/cmd_vel_nav", 10, 0.5)]
    return VelocityMux(inputs, **kw)


def test_a_lone_input_is_forwarded_as_it_arrives():
    m = mux()
    assert m.offer("navigation", *V2, now=0.0) == V2
    assert m.offer("navigation", *V1, now=0.1) == V1
    assert m.active(0.2) == "navigation"


def test_the_fresh_higher_priority_input_masks_the_lower_until_it_goes_stale():
    m = mux()
    assert m.offer("navigation", *V2, now=0.0) == V2
    assert m.offer("mission", *V1, now=0.1) == V1
    assert m.offer("navigation", *V2, now=0.2) is None          # masked
    assert m.tick(0.5) is None                                   # mission still fresh (0.4 s old)
    assert m.offer("navigation", *V2, now=0.55) is None
    assert m.offer("navigation", *V2, now=0.65) == V2            # mission 0.55 s old: stale
    assert m.counts()["navigation"] == {"forwarded": 2, "masked": 2, "rejected": 0}


def test_one_zero_command_when_no_input_wins_any_more_then_silence():
    m = mux()
    m.offer("navigation", *V2, now=0.0)
    assert m.tick(0.4) is None
    assert m.tick(0.6) == ZERO
    assert m.tick(0.7) is None and m.tick(5.0) is None
    assert m.idle_stops == 1
    assert m.offer("navigation", *V1, now=6.0) == V1             # a new command drives again


def test_without_stop_on_idle_the_mux_only_goes_silent():
    m = mux(stop_on_idle=False)
    m.offer("navigation", *V2, now=0.0)
    assert m.tick(0.6) is None and m.idle_stops == 0


def test_a_zero_timeout_input_never_goes_stale():
    m = VelocityMux([MuxInput("a", "/a", 5, 0.0)])
    assert m.tick(0.0) is None                                   # nothing received yet: no winner
    m.offer("a", *V1, now=0.0)
    assert m.active(1e6) == "a"


def test_a_non_finite_command_is_rejected_and_refreshes_nothing():
    m = mux()
    m.offer("mission", *V1, now=0.0)
    assert m.offer("mission", (math.nan, 0.0, 0.0), (0.0, 0.0, 0.0), now=0.4) is None
    assert m.counts()["mission"]["rejected"] == 1
    assert m.tick(0.6) == ZERO                                   # the NaN did not keep mission fresh


def test_the_lock_masks_inputs_up_to_its_priority_and_stops_the_base_once():
    m = mux(lock=MuxLock("/pause", priority=15))
    assert m.offer("navigation", *V2, now=0.0) == V2
    assert m.set_lock(True, now=0.1) == ZERO                     # navigation (10) masked: stop now
    assert m.offer("navigation", *V2, now=0.2) is None
    assert m.offer("mission", *V1, now=0.25) == V1               # mission (20) is above the lock
    assert m.set_lock(False, now=0.3) is None
    assert m.locked(0.3) is False


def test_a_heartbeat_lock_engages_before_the_first_beat_and_when_beats_stop():
    m = mux(lock=MuxLock("/heartbeat", priority=255, timeout_s=0.5))
    assert m.offer("navigation", *V2, now=0.0) is None           # no heartbeat yet: locked
    m.set_lock(False, now=0.1)
    assert m.offer("navigation", *V2, now=0.2) == V2
    assert m.tick(0.5) is None
    assert m.tick(0.7) == ZERO                                   # heartbeat 0.6 s old: locked


@pytest.mark.parametrize("args, says", [
    (([], [], [], []), "input_names is empty"),
    ((["a", "b"], ["/a"], [1, 2], [0.5, 0.5]), "input_topics has 1 entries"),
    ((["a", "b"], ["/a", "/b"], [3, 3], [0.5, 0.5]), "share priority 3"),
    ((["a"], ["/a"], [0], [0.5]), "priority 0 outside 1..255"),
    ((["a"], ["/a"], [1], [-1.0]), "timeout -1.0 s outside"),
    ((["a", "a"], ["/a", "/b"], [1, 2], [0.5, 0.5]), "appears twice"),
    ((["a", "b"], ["/a", "/a"], [1, 2], [0.5, 0.5]), "already another input's"),
])
def test_a_bad_configuration_is_one_clear_error(args, says):
    with pytest.raises(MuxConfigError, match=says):
        build_inputs(*args)
