"""Leasing a private ROS_DOMAIN_ID for each test.

Why leases and not a counter: two test suites may run at once on one machine (a developer's
`make test` while CI runs, or colcon testing packages in parallel). A lease is an exclusive
``flock`` on a per-domain lock file, so no two live tests share a domain even across
processes, and the kernel releases it if the holder dies.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

# Domain 0 is where users' own graphs run by default: tests never use it. With Fast DDS's
# default port mapping, ids up to 101 are valid on Linux for any number of participants.
FIRST_TEST_DOMAIN = 1
LAST_TEST_DOMAIN = 101


def _lock_dir() -> Path:
    path = Path(os.environ.get("RLSTACK_DOMAIN_LOCK_DIR", Path(tempfile.gettempdir()) / "rlstack-ros-domains"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class DomainLease:
    """An exclusively held ROS domain id; release it (or let the process exit) to free it."""

    domain_id: int
    _fd: int | None = field(default=None, repr=False)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "DomainLease":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lease_domain_id() -> DomainLease:
    """Return a lease on a domain id no other live test holds.

    Free ids are tried least recently leased first (each lease touches its lock file), so an
    id is reused only after every other one has been: a node that outlives its test by a few
    seconds (or a stray one that never exits) cannot show up in the very next test's graph. Ids
    never leased on this machine come first, in an order offset by the process id so that
    concurrent suites rarely contend for the same lock files.
    """
    span = LAST_TEST_DOMAIN - FIRST_TEST_DOMAIN + 1
    start = os.getpid() % span
    lock_dir = _lock_dir()

    def last_leased(domain_id: int) -> float:
        try:
            return (lock_dir / f"{domain_id}.lock").stat().st_mtime
        except FileNotFoundError:
            return 0.0

    by_offset = [FIRST_TEST_DOMAIN + (start + i) % span for i in range(span)]
    for domain_id in sorted(by_offset, key=last_leased):   # stable: the offset order breaks ties
        fd = os.open(lock_dir / f"{domain_id}.lock", os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            os.utime(fd)   # this id is now the most recently leased
        except PermissionError:
            pass           # another user's lock file: the lease still holds, only the order is lost
        return DomainLease(domain_id, fd)
    raise RuntimeError(
        f"all ROS domain ids {FIRST_TEST_DOMAIN}..{LAST_TEST_DOMAIN} are leased by running tests "
        f"(lock files in {lock_dir}); wait for other suites to finish"
    )
