"""Removing the shared-memory files a killed Fast DDS process leaves behind (Linux, ``/dev/shm``).

Why: every Fast DDS participant maps a segment (``fastdds_<id>``, 16 MiB with the project's
default profile, 1 MiB with the small-message one) and its ports (``fastdds_port<N>``). A process
that exits normally removes them; one killed with SIGKILL, or that dies in native code, cannot,
and nothing else does: Fast DDS only offers ``fastdds shm clean`` by hand. On a robot whose nodes
are respawned after crashes, each crash leaves ~17 MB in ``/dev/shm``, which is RAM. The runner
therefore removes such leftovers after a node of its graph exits abnormally, before it is
respawned, so that a graph running for hours does not fill RAM with them.

Which files are leftovers is decided the way ``fastdds shm clean`` decides it: each segment and port
has a lock file (``..._el`` or ``..._sl``) that its owner holds locked (``flock``) while it lives; a
lock file nobody holds belongs to a dead process. Two guards on top: a lock file younger than
``min_age_s`` is left alone (a participant being created right now may not hold its lock yet), and
a file this process may not open (another user's) is treated as in use.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List

SHM_DIR = Path("/dev/shm")
_SEGMENT_LOCK = re.compile(r"^fastdds_[0-9a-z]{16}_(el|sl)$")
_PORT_LOCK = re.compile(r"^fastdds_port\d{1,5}_(el|sl)$")


@dataclass
class Cleaned:
    """What :func:`clean_zombie_fastdds` removed (or would remove, with ``dry_run``)."""

    segments: int = 0
    ports: int = 0
    bytes_freed: int = 0
    in_use: int = 0
    files: List[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"{self.segments} segment(s) and {self.ports} port(s) ({self.bytes_freed / 2**20:.1f} MiB) "
                f"left by dead processes; {self.in_use} in use")


def _held(lock_file: Path) -> bool:
    """True when a live process holds ``lock_file`` (or it cannot be checked: another user's file)."""
    try:
        with open(lock_file, "ab") as fd:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # released when the file is closed
        return False
    except OSError:   # locked by its owner (BlockingIOError), or not ours to open (PermissionError)
        return True


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def clean_zombie_fastdds(shm_dir: Path = SHM_DIR, min_age_s: float = 2.0, dry_run: bool = False) -> Cleaned:
    """Remove the Fast DDS segments and ports whose owner is dead; returns what was removed."""
    out = Cleaned()
    try:
        names = os.listdir(shm_dir)
    except OSError:
        return out   # no /dev/shm (not Linux): nothing to do
    now = time.time()
    for name in sorted(names):
        is_segment, is_port = bool(_SEGMENT_LOCK.match(name)), bool(_PORT_LOCK.match(name))
        if not (is_segment or is_port):
            continue
        lock = shm_dir / name
        try:
            young = now - lock.stat().st_mtime < min_age_s
        except OSError:
            continue   # removed meanwhile (its owner exited cleanly)
        if young or _held(lock):
            out.in_use += 1
            continue
        base = name[:-3]
        victims = [shm_dir / base, lock]
        if is_port:
            victims.append(shm_dir / f"sem.{base}_mutex")   # the port's named semaphore (POSIX)
        for path in victims:
            out.bytes_freed += _size(path) if path.exists() else 0
            if not dry_run:
                try:
                    path.unlink()
                except OSError:
                    pass
            out.files.append(path.name)
        if is_segment:
            out.segments += 1
        else:
            out.ports += 1
    return out


def uses_fastdds() -> bool:
    """Whether this graph's nodes use Fast DDS (the ROS 2 default RMW, and the project's)."""
    return os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp") in ("rmw_fastrtps_cpp", "rmw_fastrtps_dynamic_cpp")
