"""Fixtures: a throwaway ament prefix with fake node executables, and process hygiene.

The fake prefix is a real one as far as ament_index_python is concerned (marker file in
``share/ament_index/resource_index/packages``), so the code under test resolves packages
exactly as it would in a sourced workspace.

The fake node (``lib/demo/fake_node``) is a small Python script. Its behaviour is chosen
with the extra argv before ``--ros-args`` (the launch file's ``args``); it reports what
happens to it through marker files in ``$FAKE_NODE_DIR`` named ``<node name>.<event>``:
``pid`` (written once its signal handlers are installed: "ready"), ``sigint``, ``sigterm``
and ``grandchild`` (pid of a helper it spawned).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Callable, Dict, List

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1]

FAKE_NODE = textwrap.dedent(
    '''\
    #!/usr/bin/env python3
    """Fake ROS node: prints its argv, reacts to signals as told, exits as told."""
    import json, os, signal, subprocess, sys, time

    argv = sys.argv[1:]
    cut = argv.index("--ros-args") if "--ros-args" in argv else len(argv)
    user, ros = argv[:cut], argv[cut + 1:]
    name = os.path.basename(sys.argv[0])
    for i, word in enumerate(ros[:-1]):
        if word == "-r" and ros[i + 1].startswith("__node:="):
            name = ros[i + 1].split(":=", 1)[1]
    state = os.environ["FAKE_NODE_DIR"]

    def mark(event, text=""):
        tmp = os.path.join(state, f".{name}.{event}.tmp")
        with open(tmp, "w") as handle:
            handle.write(text)
        os.replace(tmp, os.path.join(state, f"{name}.{event}"))

    def opt(flag, default=None):
        return user[user.index(flag) + 1] if flag in user else default

    exit_code = int(opt("--exit", "0"))
    after = opt("--after")

    def on_int(signum, frame):
        mark("sigint")
        if "--ignore-int" in user:
            print("ignoring SIGINT", flush=True)
            return
        print("got SIGINT", flush=True)
        sys.exit(0)

    def on_term(signum, frame):
        mark("sigterm")
        if "--ignore-term" in user:
            print("ignoring SIGTERM", flush=True)
            return
        sys.exit(143)

    signal.signal(signal.SIGINT, on_int)
    signal.signal(signal.SIGTERM, on_term)
    print("ARGV " + json.dumps(argv), flush=True)
    print("hello on stderr", file=sys.stderr, flush=True)
    if "--grandchild" in user:
        helper = subprocess.Popen(["sleep", "60"])
        mark("grandchild", str(helper.pid))
    mark("pid", str(os.getpid()))
    if after is not None:
        time.sleep(float(after))
        print("finished", flush=True)
        sys.exit(exit_code)
    while True:
        time.sleep(0.05)
    '''
)

GOOD_PARAMS = textwrap.dedent(
    """\
    talker:
      ros__parameters:
        rate_hz: 5.0
        frame: map
    /**:
      ros__parameters:
        use_sim_time: false
    """
)


def wait_for(condition: Callable[[], object], timeout: float = 10.0, what: str = "") -> object:
    """Poll ``condition`` until truthy; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what or condition}")
        time.sleep(0.02)


def alive(pid: int) -> bool:
    """True if ``pid`` is a live process (a zombie counts as dead: it runs no code)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "r") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return False


class Prefix:
    """The throwaway ament prefix plus helpers to write launch files next to it."""

    def __init__(self, root: Path, work: Path, state: Path) -> None:
        self.root = root
        self.work = work
        self.state = state
        self.share = root / "share" / "demo"
        self.lib = root / "lib" / "demo"

    def launch(self, text: str, name: str = "test.launch.yaml") -> Path:
        """Write a launch file in the work directory and return its path."""
        path = self.work / name
        path.write_text(textwrap.dedent(text))
        return path

    def write(self, relative: str, text: str) -> Path:
        path = self.work / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    def pid_of(self, node: str) -> int:
        return int((self.state / f"{node}.pid").read_text())

    def has(self, node: str, event: str) -> bool:
        return (self.state / f"{node}.{event}").exists()

    def recorded_pids(self) -> List[int]:
        pids = []
        for path in list(self.state.glob("*.pid")) + list(self.state.glob("*.grandchild")):
            try:
                pids.append(int(path.read_text()))
            except (OSError, ValueError):
                pass
        return pids

    def env(self) -> Dict[str, str]:
        """Environment for running the CLI as a subprocess."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(PACKAGE_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
        )
        return env


@pytest.fixture
def prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Build the fake prefix, point AMENT_PREFIX_PATH at it, and check for leftovers."""
    root = tmp_path / "install"
    (root / "share" / "ament_index" / "resource_index" / "packages").mkdir(parents=True)
    for package in ("demo", "other"):
        (root / "share" / "ament_index" / "resource_index" / "packages" / package).write_text("")
        (root / "share" / package).mkdir(parents=True)
    lib = root / "lib" / "demo"
    lib.mkdir(parents=True)
    node = lib / "fake_node"
    node.write_text(FAKE_NODE)
    node.chmod(0o755)
    (lib / "not_executable").write_text(FAKE_NODE)
    (lib / "not_executable").chmod(0o644)
    bad = lib / "bad_shebang"
    bad.write_text("#!/nonexistent/interpreter\n")
    bad.chmod(0o755)
    params = root / "share" / "demo" / "params"
    params.mkdir()
    (params / "good.yaml").write_text(GOOD_PARAMS)
    launch_dir = root / "share" / "demo" / "launch"
    launch_dir.mkdir()
    (launch_dir / "demo.launch.yaml").write_text(
        "launch:\n  - node: {pkg: demo, exec: fake_node, name: packaged}\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(root))
    monkeypatch.setenv("FAKE_NODE_DIR", str(state))
    monkeypatch.chdir(work)
    pfx = Prefix(root, work, state)
    yield pfx
    # No test may leave a node (or a node's helper) running.
    leftovers = []
    for pid in pfx.recorded_pids():
        deadline = time.monotonic() + 3.0
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if alive(pid):
            leftovers.append(pid)
            os.kill(pid, signal.SIGKILL)
    assert not leftovers, f"processes left running after the test: {leftovers}"


@pytest.fixture
def cli(prefix: Prefix):
    """Run ``python -m rlstack_launch`` as a subprocess; every one is killed at teardown."""
    started: List[subprocess.Popen] = []

    def start(*args: str) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rlstack_launch", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=prefix.env(),
            cwd=prefix.work,
        )
        started.append(proc)
        return proc

    def run(*args: str, timeout: float = 15.0) -> subprocess.CompletedProcess:
        proc = start(*args)
        out, err = proc.communicate(timeout=timeout)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    start.run = run  # type: ignore[attr-defined]
    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
