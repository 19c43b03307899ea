"""Which Fast DDS shared-memory files count as left by a dead process (a private folder; no DDS)."""

import fcntl
import os
import time

from rlstack_launch.shm_cleanup import clean_zombie_fastdds


def _make(d, name, size=0, age_s=60.0):
    path = d / name
    path.write_bytes(b"\0" * size)
    t = time.time() - age_s
    os.utime(path, (t, t))
    return path


def test_only_unlocked_old_segments_and_ports_are_removed(tmp_path):
    dead = "fastdds_0123456789abcdef"
    live = "fastdds_fedcba9876543210"
    young = "fastdds_aaaaaaaaaaaaaaaa"
    for seg in (dead, live, young):
        _make(tmp_path, seg, size=4096)
    _make(tmp_path, dead + "_el")
    live_lock = _make(tmp_path, live + "_el")
    _make(tmp_path, young + "_el", age_s=0.0)   # being created: its owner may not hold the lock yet
    _make(tmp_path, "fastdds_port7411", size=1024)
    _make(tmp_path, "fastdds_port7411_el")
    _make(tmp_path, "sem.fastdds_port7411_mutex", size=32)
    _make(tmp_path, "fastdds_port7413")
    port_lock = _make(tmp_path, "fastdds_port7413_el")
    _make(tmp_path, "someone_elses_file")
    with open(live_lock, "ab") as a, open(port_lock, "ab") as b:   # the living hold their locks
        fcntl.flock(a, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(b, fcntl.LOCK_EX | fcntl.LOCK_NB)
        dry = clean_zombie_fastdds(tmp_path, dry_run=True)
        assert (dry.segments, dry.ports) == (1, 1) and (tmp_path / dead).exists()
        done = clean_zombie_fastdds(tmp_path)
    assert (done.segments, done.ports, done.in_use) == (1, 1, 3)
    assert done.bytes_freed == 4096 + 1024 + 32
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([live, live + "_el", young, young + "_el", "fastdds_port7413", "fastdds_port7413_el",
                           "someone_elses_file"])
    assert "2 segment(s)" not in done.summary() and "1 segment(s) and 1 port(s)" in done.summary()


def test_no_shm_folder_is_nothing_to_do(tmp_path):
    assert clean_zombie_fastdds(tmp_path / "missing").files == []
