"""Atomic file and directory writes: a reader (or a resumed run) sees the old or the new
content, never a half-written one, whenever the writer is killed.

Files: write to a temporary file in the same directory, ``fsync``, ``os.replace``.
Directories: build ``<name>.tmp-<pid>`` completely, then rename it into place.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from contextlib import contextmanager
from typing import Any, Iterator

import yaml


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes(path: str, data: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; keep the usual permissions
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def write_text(path: str, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


class _NoAliasDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:  # plain YAML for humans and other parsers
        return True


def write_yaml(path: str, data: Any) -> None:
    write_text(path, yaml.dump(data, Dumper=_NoAliasDumper, sort_keys=False, default_flow_style=None, width=100))


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@contextmanager
def staged_dir(final: str) -> Iterator[str]:
    """Yield a fresh temporary directory next to ``final``; on success move it to ``final``.

    An existing ``final`` is replaced: it is renamed aside first and removed afterwards,
    so at every instant ``final`` is either the complete old or the complete new folder
    (between the two renames it is briefly absent, never partial).
    """
    final = os.path.abspath(final.rstrip("/"))
    parent = os.path.dirname(final)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="." + os.path.basename(final) + ".tmp-", dir=parent)
    os.chmod(tmp, 0o777 & ~_umask())
    try:
        yield tmp
        for root, _, files in os.walk(tmp):
            for name in files:
                with open(os.path.join(root, name), "rb") as f:
                    os.fsync(f.fileno())
        old = None
        if os.path.exists(final):
            old = tempfile.mkdtemp(prefix="." + os.path.basename(final) + ".old-", dir=parent)
            os.rmdir(old)
            os.rename(final, old)
        os.rename(tmp, final)
        _fsync_dir(parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
