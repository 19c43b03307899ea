"""Start ROS 2 nodes (or whole graphs) as separate processes, and always stop them.

Each process gets its own session (process group), the test's ROS_DOMAIN_ID and the
project's middleware settings; its output goes to a log file the test can read and that a
failing test shows. ``ProcessGroup`` is a context manager: leaving it stops every process
it started (SIGINT, then SIGTERM, then SIGKILL), whether the test passed or not.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

# Every process any ProcessGroup started in this interpreter, for the end-of-session orphan check.
_STARTED: "weakref.WeakSet[NodeProcess]" = weakref.WeakSet()

# The variables that keep ROS traffic on this machine; env.sh sets them.
MIDDLEWARE_VARS = ("RMW_IMPLEMENTATION", "FASTDDS_DEFAULT_PROFILES_FILE", "ROS_AUTOMATIC_DISCOVERY_RANGE")


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first), or None if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks (field 22 of /proc/<pid>/stat), or None if gone:
    with the pid it names one process, whatever the pid is reused for later."""
    fields = _stat_fields(pid)
    return None if fields is None else fields[19]


def _descendants(pid: int) -> list[tuple[int, str]]:
    """Every live descendant of ``pid`` as (pid, start time), from /proc/*/stat (Linux; [] elsewhere)."""
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        fields = _stat_fields(int(entry.name))
        if fields is not None:    # None: gone meanwhile
            children.setdefault(int(fields[1]), []).append((int(entry.name), fields[19]))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child[0])
    return out


def descendant_pids(pid: int) -> list[int]:
    """Pids of every live descendant of ``pid`` (a runner's nodes and what they started)."""
    return [child for child, _ in _descendants(pid)]


def node_pids(runner_pid: int) -> dict[str, int]:
    """Node name (its ``__node:=`` remap) -> pid, for the processes a graph runner started."""
    out: dict[str, int] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        fields = _stat_fields(int(entry.name))
        if fields is None or int(fields[1]) != runner_pid or fields[0] == "Z":
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        name = next((a.split(":=", 1)[1] for a in argv if a.startswith("__node:=")), "")
        if name:
            out[name] = int(entry.name)
    return out


class NodeDeaths:
    """Calls return the graph's node processes that died since the last call (``name (pid N)``),
    also those a runner already respawned: a respawn hides a crash from the ROS graph, not from
    /proc. ``['runner exited']`` once the runner itself is gone."""

    def __init__(self, runner_pid: int) -> None:
        self.runner_pid = runner_pid
        self.known = {name: (pid, _start_time(pid)) for name, pid in node_pids(runner_pid).items()}

    def __call__(self) -> list[str]:
        fields = _stat_fields(self.runner_pid)
        if fields is None or fields[0] == "Z":
            return ["runner exited"]
        dead = [f"{name} (pid {pid})" for name, (pid, st) in self.known.items() if _start_time(pid) != st]
        self.known = {name: (pid, st) for name, (pid, st) in self.known.items() if _start_time(pid) == st}
        for name, pid in node_pids(self.runner_pid).items():
            if name not in self.known:
                self.known[name] = (pid, _start_time(pid))
        return dead


def inet_sockets(pid: int) -> list[str]:
    """The TCP/UDP (v4 and v6) sockets a process holds, as '<proto> local_address' ([] once it is gone)."""
    inodes = set()
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return []
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for proto in ("udp", "udp6", "tcp", "tcp6"):
        try:
            table = Path(f"/proc/{pid}/net/{proto}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in table:
            fields = line.split()
            if fields[9] in inodes:
                found.append(f"{proto} {fields[1]}")
    return found


def _kill_survivors(processes: Sequence[tuple[int, str]], timeout_s: float = 5.0) -> None:
    """SIGKILL those of ``processes`` (pid, start time) that still run, and wait until they are gone."""
    alive = [(pid, st) for pid, st in processes if _start_time(pid) == st]
    for pid, _ in alive:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + timeout_s
    while alive and time.monotonic() < deadline:
        # a zombie (killed, not yet reaped by its parent) still has its stat entry: it is gone for us
        alive = [(pid, st) for pid, st in alive if _start_time(pid) == st and not _is_zombie(pid)]
        time.sleep(0.02)


def _is_zombie(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is None or fields[0] == "Z"


def live_processes() -> list["NodeProcess"]:
    """Processes started by the harness in this interpreter that are still running."""
    return [p for p in list(_STARTED) if p.alive()]


def resolve_executable(package: str, executable: str) -> Path:
    """Return ``<prefix>/lib/<package>/<executable>`` from the ament index, or explain."""
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        prefix = Path(get_package_prefix(package))
    except PackageNotFoundError:
        raise FileNotFoundError(
            f"package '{package}' is not in the ament index (AMENT_PREFIX_PATH); "
            "build the workspace with 'make setup' and 'source env.sh'"
        ) from None
    path = prefix / "lib" / package / executable
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise FileNotFoundError(f"package '{package}' has no executable '{executable}' (looked for {path})")
    return path


def ros_environment(domain_id: int, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a node process: this one, on ``domain_id``, middleware checked."""
    env = dict(os.environ)
    missing = [v for v in MIDDLEWARE_VARS if not env.get(v)]
    if missing:
        raise RuntimeError(
            f"middleware settings missing ({', '.join(missing)}): run tests through 'make test' "
            "or 'source env.sh' first, so no ROS traffic can leave this machine"
        )
    env["ROS_DOMAIN_ID"] = str(domain_id)
    env["PYTHONUNBUFFERED"] = "1"
    # Colour codes make logs hard to read and grep.
    env.setdefault("RCUTILS_COLORIZED_OUTPUT", "0")
    env.update(extra or {})
    return env


@dataclass(eq=False)
class NodeProcess:
    """One child process with its log file."""

    name: str
    argv: list[str]
    log_path: Path
    popen: subprocess.Popen = field(repr=False)
    _log_file: object = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def wait_for_output(self, text: str, timeout: float = 10.0) -> None:
        """Wait until ``text`` appears in the process's output; raise if it dies or times out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_text():
                return
            if not self.alive():
                break
            time.sleep(0.02)
        state = "running" if self.alive() else f"exited with {self.returncode}"
        raise TimeoutError(
            f"'{self.name}' ({state}) did not print {text!r} within {timeout} s; last output:\n"
            + self.tail()
        )

    def wait(self, timeout: float) -> int:
        """Wait for the process to exit by itself; return its exit code."""
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"'{self.name}' still running after {timeout} s; last output:\n{self.tail()}") from None

    def send_signal(self, sig: int) -> None:
        if self.alive():
            os.killpg(self.popen.pid, sig)

    def stop(self, grace: float = 5.0) -> int:
        """Stop the whole process group: SIGINT, then SIGTERM, then SIGKILL. Return the exit code.

        A runner starts each node in a process group of its own, which the signals to the
        runner's group do not reach; a node that outlived a failed test once drove a robot in
        the next graph on the machine (a second navigation server). So every descendant seen
        before the first signal that is still alive at the end is killed too."""
        descendants = _descendants(self.popen.pid)
        for sig, wait_s in ((signal.SIGINT, grace), (signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
            if not self.alive():
                break
            try:
                os.killpg(self.popen.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.popen.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                continue
        # Children the node itself started (a runner's nodes) share its group: reap them too.
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        _kill_survivors(descendants)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        return self.popen.wait()

    def dump_stacks(self, settle_s: float = 1.0) -> None:
        """Ask the process (and, for a runner, every node it started) to print its threads' stacks.

        SIGUSR1: nodes run through ``rlstack_common.run_node`` print and keep running; the runner
        forwards it. Only for processes that handle it (any other process would die of it).
        """
        if self.alive():
            try:
                os.killpg(self.popen.pid, signal.SIGUSR1)
            except ProcessLookupError:
                return
            time.sleep(settle_s)

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])


class ProcessGroup:
    """The processes of one test; leaving the context stops them all."""

    def __init__(self, domain_id: int, log_dir: Path, env: Mapping[str, str] | None = None) -> None:
        self.domain_id = domain_id
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.extra_env = dict(env or {})
        self.processes: list[NodeProcess] = []

    def __enter__(self) -> "ProcessGroup":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()

    def env(self) -> dict[str, str]:
        return ros_environment(self.domain_id, self.extra_env)

    def start(self, argv: Sequence[str], name: str, env: Mapping[str, str] | None = None,
              cwd: Path | None = None) -> NodeProcess:
        """Start any command as a harness-managed process."""
        full_env = self.env()
        full_env.update(env or {})
        log_path = self.log_dir / f"{name}.log"
        log_file = open(log_path, "wb")
        popen = subprocess.Popen(
            list(argv), stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=full_env, cwd=cwd, start_new_session=True,
        )
        proc = NodeProcess(name=name, argv=list(argv), log_path=log_path, popen=popen, _log_file=log_file)
        self.processes.append(proc)
        _STARTED.add(proc)
        return proc

    def start_node(
        self,
        package: str,
        executable: str,
        *,
        name: str | None = None,
        namespace: str | None = None,
        params_file: Path | str | None = None,
        params: Mapping[str, object] | None = None,
        remaps: Mapping[str, str] | None = None,
        extra_args: Iterable[str] = (),
    ) -> NodeProcess:
        """Start ``ros2 run``-style: ``<exe> --ros-args -r __node:=... --params-file ... -p ...``."""
        argv = [str(resolve_executable(package, executable)), *extra_args, "--ros-args"]
        if name:
            argv += ["-r", f"__node:={name}"]
        if namespace:
            argv += ["-r", f"__ns:={namespace}"]
        if params_file is not None:
            if not Path(params_file).is_file():
                raise FileNotFoundError(f"params file {params_file} does not exist")
            argv += ["--params-file", str(params_file)]
        for key, value in (params or {}).items():
            argv += ["-p", f"{key}:={_param_literal(value)}"]
        for src, dst in (remaps or {}).items():
            argv += ["-r", f"{src}:={dst}"]
        return self.start(argv, name=name or executable)

    def start_graph(self, launch_file: Path | str, args: Mapping[str, object] | None = None,
                    name: str = "runner", grace: float = 5.0) -> NodeProcess:
        """Start a whole graph through the project's runner (``python -m rlstack_launch``)."""
        argv = [sys.executable, "-m", "rlstack_launch", str(launch_file), "--grace", str(grace)]
        argv += [f"{k}:={_param_literal(v)}" for k, v in (args or {}).items()]
        return self.start(argv, name=name)

    def assert_all_alive(self) -> None:
        """Fail with the dead processes' output if any process has exited."""
        dead = [p for p in self.processes if not p.alive()]
        if dead:
            report = "\n".join(f"--- {p.name} exited with {p.returncode}:\n{p.tail()}" for p in dead)
            raise AssertionError(f"{len(dead)} process(es) died:\n{report}")

    def stop_all(self, grace: float = 5.0) -> dict[str, int]:
        """Stop every process (last started first); return their exit codes by name."""
        codes = {}
        for proc in reversed(self.processes):
            codes[proc.name] = proc.stop(grace)
        return codes


def _param_literal(value: object) -> str:
    """Format a Python value as a ROS 2 command-line parameter literal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_param_literal(v) for v in value) + "]"
    return str(value)
