"""Starting and supervising a graph of node processes.

Design notes (the why):

* Each node runs in its own process group. A Ctrl-C at the terminal then reaches only the
  runner, which decides what the nodes get and when; and signalling the *group* also
  reaches helper processes a node may have spawned, so nothing is orphaned.
* On Linux each child also gets ``PR_SET_PDEATHSIG`` = SIGTERM, so even a runner that is
  SIGKILLed (no chance to clean up) does not leave nodes running.
* Output is read by one thread per stream and written line by line under a lock, so
  lines from different nodes never interleave mid-line.
* The main thread only polls child status and handles signals (recorded by the handler,
  acted on in the loop) so that no real work runs inside a signal handler.
* A node marked ``respawn: true`` is started again ``respawn_delay`` seconds after it exits
  while the graph runs, as ``ros2 launch`` does (no retry limit there either; every restart
  is logged with its count). A restart forks while the output threads run; the fork's
  ``preexec_fn`` only calls ``setpgid`` and ``prctl`` (no Python lock, no allocation that
  glibc does not make fork-safe), which is why it is safe here despite Python's general
  warning about ``preexec_fn`` and threads.
* After a node exits with a non-zero code (killed, crashed), the Fast DDS shared-memory files
  that dead processes left in ``/dev/shm`` are removed (``shm_cleanup``): a killed node cannot
  remove its own ~17 MB, and a graph that respawns crashed nodes for hours would fill RAM.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Callable, List, Optional, Sequence

from .errors import LaunchError
from .launch_file import NodeSpec
from .shm_cleanup import clean_zombie_fastdds, uses_fastdds

_POLL_S = 0.05
_KILL_WAIT_S = 5.0  # after SIGKILL; only a process stuck in the kernel survives this long
_TAG = "[rlstack_launch]"


@dataclass
class _Child:
    spec: NodeSpec
    proc: subprocess.Popen
    threads: List[threading.Thread] = field(default_factory=list)
    returncode: Optional[int] = None
    restart_at: Optional[float] = None   # monotonic time of a pending respawn
    respawns: int = 0

    @property
    def running(self) -> bool:
        return self.returncode is None

    @property
    def pending(self) -> bool:
        """Exited, and to be started again (respawn)."""
        return self.restart_at is not None


class _Output:
    """Line-oriented, thread-safe writer for node output and runner messages."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def write(self, stream_name: str, text: str) -> None:
        # Looked up on every call (not cached) so redirections such as pytest's capture
        # that replace sys.stdout after import are honoured.
        stream: IO[str] = getattr(sys, stream_name)
        with self._lock:
            try:
                stream.write(text)
                stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                # The terminal went away; keep draining the children's pipes regardless,
                # otherwise they would block on a full pipe and never shut down.
                pass

    def log(self, message: str) -> None:
        self.write("stderr", f"{_TAG} {message}\n")


def _pump(pipe: IO[bytes], label: str, stream_name: str, out: _Output) -> None:
    """Copy one child stream to ours, prefixing every line with ``[label] ``."""
    try:
        for raw in iter(pipe.readline, b""):
            text = raw.decode("utf-8", errors="replace")
            if not text.endswith("\n"):
                text += "\n"  # a final line without newline is still one whole line
            out.write(stream_name, f"[{label}] {text}")
    except (OSError, ValueError):
        pass
    finally:
        try:
            pipe.close()
        except OSError:
            pass


def _make_preexec(parent_pid: int) -> Callable[[], None]:
    """Child-side setup between fork and exec: new process group, die with the runner."""
    libc = None
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
        except OSError:
            libc = None

    def preexec() -> None:
        os.setpgid(0, 0)
        if libc is not None:
            pr_set_pdeathsig = 1
            libc.prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
            if os.getppid() != parent_pid:
                # The runner died between fork and prctl: nobody would ever stop us.
                os._exit(1)

    return preexec


def _clean_shared_memory(label: str, out: "_Output") -> None:
    """After a node died (killed, crashed): remove the Fast DDS shared memory dead processes left
    (shm_cleanup.py says why and how it tells the dead from the living)."""
    if not uses_fastdds():
        return
    cleaned = clean_zombie_fastdds()
    if cleaned.segments or cleaned.ports:
        out.log(f"{label} left shared memory behind: removed {cleaned.summary()}")


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    return f"exited with code {code}"


def _signal_group(child: _Child, sig: int) -> None:
    """Send ``sig`` to the child's whole process group (node plus anything it spawned)."""
    try:
        os.killpg(child.proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        # Already gone (or the group leader exited and the group is empty).
        pass


def run_graph(
    specs: Sequence[NodeSpec],
    grace: float = 10.0,
    term_timeout: Optional[float] = None,
) -> int:
    """Start every node, supervise them, and stop them all; return the exit code.

    Args:
        specs: nodes from :func:`rlstack_launch.load_launch_file`.
        grace: seconds between the SIGINT that asks nodes to stop and the SIGTERM.
        term_timeout: seconds between SIGTERM and SIGKILL (default ``min(grace, 5)``).

    Returns:
        0 on a clean shutdown (SIGINT/SIGTERM to the runner, a required node exiting 0,
        or every node exiting 0); 1 when a required node failed (non-zero code, or a
        signal the runner did not send), or when the graph ended by itself with some node
        having failed.

    Raises:
        LaunchError: a node could not be started (already started ones are stopped).
    """
    if term_timeout is None:
        term_timeout = min(grace, 5.0)
    out = _Output()
    if not specs:
        out.log("the launch file starts no nodes; nothing to do")
        return 0
    for spec in specs:
        if not spec.label:
            spec.label = spec.name

    received: List[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        received.append(signum)

    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {}
    children: List[_Child] = []

    def on_stack_dump(_signum: int, _frame: object) -> None:
        # SIGUSR1: every node prints its threads' stacks (rlstack_common.run_node) and runs on.
        for child in list(children):
            if child.proc.poll() is None:
                _signal_group(child, signal.SIGUSR1)

    if threading.current_thread() is threading.main_thread():
        # Installed before any child exists, so a Ctrl-C during start-up is not lost.
        for sig in handled:
            previous[sig] = signal.signal(sig, on_signal)
        previous[signal.SIGUSR1] = signal.signal(signal.SIGUSR1, on_stack_dump)

    start_error: Optional[LaunchError] = None
    try:
        env = dict(os.environ)
        # Python nodes buffer stdout when it is a pipe; without this their output would
        # arrive in bursts, long after the fact.
        env.setdefault("PYTHONUNBUFFERED", "1")
        preexec = _make_preexec(os.getpid())

        def spawn(spec: NodeSpec) -> subprocess.Popen:
            return subprocess.Popen(
                spec.command(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                preexec_fn=preexec,  # noqa: PLW1509 (see the module's design notes)
                close_fds=True,
            )

        for spec in specs:
            try:
                proc = spawn(spec)
            except (OSError, subprocess.SubprocessError) as exc:
                start_error = _start_error(spec, exc)
                break
            children.append(_Child(spec, proc))
            out.log(f"started {spec.label} (pid {proc.pid})")
        # Reader threads are started only after every first fork (a single-threaded fork is
        # the safe case); respawns fork later, see the module's design notes.
        for child in children:
            _start_pumps(child, out)
        if start_error is not None:
            # Half a graph is useless: stop what did start, gracefully, then report.
            _supervise(children, received, grace, term_timeout, out,
                       stop_reason="a node could not be started")
            raise start_error
        return _supervise(children, received, grace, term_timeout, out, spawn=spawn)
    finally:
        _cleanup(children, out)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _start_error(spec: NodeSpec, exc: BaseException) -> LaunchError:
    reason = getattr(exc, "strerror", None) or str(exc)
    return LaunchError(
        f"{spec.source}: node '{spec.label}' could not be started: {reason} "
        f"({spec.exe_path}; check its shebang line and permissions)"
    )


def _start_pumps(child: _Child, out: _Output) -> None:
    """One reader thread per output stream of the child's current process."""
    streams = ((child.proc.stdout, "stdout"), (child.proc.stderr, "stderr"))
    for pipe, stream_name in streams:
        thread = threading.Thread(
            target=_pump,
            args=(pipe, child.spec.label, stream_name, out),
            name=f"rlstack_launch-{child.spec.label}-{stream_name}",
            daemon=True,
        )
        thread.start()
        child.threads.append(thread)


def _supervise(
    children: List[_Child],
    received: List[int],
    grace: float,
    term_timeout: float,
    out: _Output,
    stop_reason: Optional[str] = None,
    spawn: Optional[Callable[[NodeSpec], subprocess.Popen]] = None,
) -> int:
    """Main loop: react to signals and child exits until every child is gone.

    With ``stop_reason`` the graph is stopped right away (after a failed start). ``spawn``
    starts a node again (``respawn: true``); without it nothing is respawned.
    """
    stage = 0  # 0 running, 1 SIGINT sent, 2 SIGTERM sent, 3 SIGKILL sent
    deadline = 0.0
    exit_code = 0
    stopped_by_us = False
    any_failed = False
    seen_signals = 0

    def escalate() -> None:
        nonlocal stage, deadline
        stage += 1
        for child in children:
            if child.pending:
                child.restart_at = None
                out.log(f"{child.spec.label} will not be respawned: the graph is stopping")
        alive = [c for c in children if c.running]
        if stage == 1:
            sig, wait = signal.SIGINT, grace
        elif stage == 2:
            sig, wait = signal.SIGTERM, term_timeout
            out.log("still running after SIGINT: " + ", ".join(c.spec.label for c in alive)
                    + "; sending SIGTERM")
        else:
            sig, wait = signal.SIGKILL, _KILL_WAIT_S
            out.log("still running after SIGTERM: " + ", ".join(c.spec.label for c in alive)
                    + "; sending SIGKILL")
        for child in alive:
            _signal_group(child, sig)
        deadline = time.monotonic() + wait

    if stop_reason is not None:
        out.log(f"{stop_reason}, stopping all nodes")
        stopped_by_us = True
        escalate()

    while True:
        while seen_signals < len(received):
            signum = received[seen_signals]
            seen_signals += 1
            if stage == 0:
                out.log(f"received {signal.Signals(signum).name}, stopping all nodes")
                stopped_by_us = True
                escalate()
            elif stage < 3:
                # A second Ctrl-C means "faster": skip the rest of the grace period.
                escalate()

        for child in children:
            if not child.running:
                continue
            code = child.proc.poll()
            if code is None:
                continue
            child.returncode = code
            # Helpers the node spawned would otherwise outlive it (and hold its pipes open).
            _signal_group(child, signal.SIGKILL)
            label = child.spec.label
            if code != 0:
                _clean_shared_memory(label, out)
            if stage > 0:
                out.log(f"{label} {_describe_exit(code)}")
                continue
            if child.spec.respawn and spawn is not None:
                delay = child.spec.respawn_delay
                child.restart_at = time.monotonic() + delay
                out.log(f"{label} {_describe_exit(code)}; respawning it in {delay:g} s "
                        f"(respawn {child.respawns + 1})")
                continue
            if child.spec.required:
                if code == 0:
                    out.log(f"{label} exited with code 0; it is required, stopping the graph")
                else:
                    out.log(f"{label} {_describe_exit(code)}; it is required, stopping the graph")
                    exit_code = 1
                stopped_by_us = True
                escalate()
            else:
                if code != 0:
                    any_failed = True
                    out.log(f"{label} {_describe_exit(code)} (not required; the graph goes on)")
                else:
                    out.log(f"{label} exited with code 0")

        if stage == 0 and spawn is not None:
            now = time.monotonic()
            for child in children:
                if child.pending and now >= child.restart_at:
                    child.restart_at = None
                    child.respawns += 1
                    try:
                        child.proc = spawn(child.spec)
                    except (OSError, subprocess.SubprocessError) as exc:
                        out.log(f"respawn failed: {_start_error(child.spec, exc)}")
                        any_failed = True
                        continue
                    child.returncode = None
                    _start_pumps(child, out)
                    out.log(f"respawned {child.spec.label} (pid {child.proc.pid}, "
                            f"respawn {child.respawns})")

        if not any(c.running or c.pending for c in children):
            break
        if stage > 0 and time.monotonic() >= deadline:
            if stage >= 3:
                stuck = ", ".join(
                    f"{c.spec.label} (pid {c.proc.pid})" for c in children if c.running
                )
                out.log(f"giving up on processes that survived SIGKILL: {stuck}")
                return 1
            escalate()
        time.sleep(_POLL_S)

    if exit_code:
        return exit_code
    if not stopped_by_us and any_failed:
        return 1
    return 0


def _cleanup(children: List[_Child], out: _Output) -> None:
    """Last line of defence (also on exceptions): no child or grandchild survives us."""
    for child in children:
        if child.proc.poll() is None:
            _signal_group(child, signal.SIGKILL)
            try:
                child.proc.wait(timeout=_KILL_WAIT_S)
            except subprocess.TimeoutExpired:
                out.log(f"could not reap {child.spec.label} (pid {child.proc.pid})")
    for child in children:
        for thread in child.threads:
            thread.join(timeout=2.0)
