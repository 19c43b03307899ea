"""Deadline and spin_until / spin_for (rlstack_common.spin) with a fake clock and executor."""

import pytest

from rlstack_common import spin as spin_mod
from rlstack_common.spin import Deadline, spin_for, spin_until


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class FakeExecutor:
    """spin_once advances the fake clock by the timeout it is given and records it."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock, self.waits = clock, []

    def spin_once(self, timeout_sec: float) -> None:
        self.waits.append(timeout_sec)
        self.clock.now += timeout_sec


@pytest.fixture
def clock(monkeypatch):
    c = FakeClock()
    monkeypatch.setattr(spin_mod.time, "monotonic", c)
    return c


def test_deadline_remaining_expired_and_slices():
    c = FakeClock()
    d = Deadline(0.25, clock=c)
    assert d.remaining() == pytest.approx(0.25) and not d.expired()
    waits = []
    for w in d.slices(0.1):
        waits.append(w)
        c.now += w
    assert waits == pytest.approx([0.1, 0.1, 0.05])
    assert d.expired() and d.remaining() == 0.0


def test_spin_until_returns_at_once_when_the_predicate_holds(clock):
    ex = FakeExecutor(clock)
    spin_until(ex, lambda: True, 1.0, "nothing")
    assert ex.waits == []


def test_spin_until_spins_in_steps_until_the_predicate_holds(clock):
    ex = FakeExecutor(clock)
    spin_until(ex, lambda: len(ex.waits) >= 3, 1.0, "three spins", step=0.05)
    assert ex.waits == pytest.approx([0.05] * 3)


def test_spin_until_times_out_naming_what_it_waited_for(clock):
    ex = FakeExecutor(clock)
    with pytest.raises(TimeoutError, match=r"timed out after 0.12 s waiting for the bridge"):
        spin_until(ex, lambda: False, 0.12, "the bridge", step=0.05)
    assert sum(ex.waits) == pytest.approx(0.12)        # the last wait is cut to the deadline
    assert ex.waits[-1] == pytest.approx(0.02)


def test_spin_until_stop_and_custom_errors(clock):
    class Late(RuntimeError):
        pass

    class Stopped(RuntimeError):
        pass

    ex = FakeExecutor(clock)
    with pytest.raises(Stopped, match="stopped while waiting for the reset"):
        spin_until(ex, lambda: False, 5.0, "the reset", should_stop=lambda: len(ex.waits) == 2, stopped=Stopped)
    with pytest.raises(Late):
        spin_until(ex, lambda: False, 0.1, "x", error=Late)


def test_spin_for_spins_the_whole_time(clock):
    ex = FakeExecutor(clock)
    spin_for(ex, 0.23, step=0.1)
    assert ex.waits == pytest.approx([0.1, 0.1, 0.03])
