"""The pool of compile workers (service/worker.py) in the user's process.

Workers start on first use (`warm()` starts one early, so it boots while dynamo and
AOTAutograd trace the first graph), are reused, and grow with demand up to
LAMINA_COMPILE_WORKERS (default: half the cores, 2 to 8). A request that finds every
worker busy starts another or waits for one. A worker that dies (abort, segfault, killed,
out of memory) or overruns LAMINA_COMPILE_TIMEOUT (default 600 s; it is killed) raises
WorkerCrashed naming the stage it was in; it is replaced by the next request.
Each worker's stderr goes to a log file whose tail the crash report carries.
"""
from __future__ import annotations

import atexit
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

from .worker import read_message, write_message

_STARTUP_TIMEOUT_S = 120.0


class WorkerCrashed(RuntimeError):
    """The worker compiling a graph died or timed out."""

    def __init__(self, how: str, stage: str | None, log_tail: str):
        self.how, self.stage, self.log_tail = how, stage, log_tail
        where = f" at stage {stage!r}" if stage else " before its first stage"
        super().__init__(f"the compile worker {how}{where}")


class WorkerError(RuntimeError):
    """A compile failed in the worker with a Python exception (an ordinary compile error)."""

    def __init__(self, info: dict):
        self.info = info
        super().__init__(f"{info['type']}: {info['message']}")


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _search_path() -> str:
    """PYTHONPATH for a worker: where this lamina and the MLIR bindings were imported from."""
    import mlir

    roots = [os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]
    roots += [os.path.dirname(os.path.abspath(p)) for p in getattr(mlir, "__path__", [])]
    existing = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(dict.fromkeys(roots + ([existing] if existing else [])))


class Worker:
    def __init__(self, imports: tuple[str, ...] = (), env: dict | None = None):
        self.log = tempfile.NamedTemporaryFile(prefix="lamina-worker-", suffix=".log", delete=False)
        env = dict(os.environ, **(env or {}), PYTHONPATH=_search_path())
        if imports:   # imported while it boots (worker.py), before its first request
            env["LAMINA_WORKER_IMPORTS"] = ",".join(imports)
        self.proc = subprocess.Popen([sys.executable, "-m", "lamina.service.worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, env=env, close_fds=True,
                                     start_new_session=True)   # a ^C in the terminal is the user's, not the worker's
        self.pid = self.proc.pid
        self.ready = False
        self.served: dict[str, int] = {}   # requests served per kind ("ir", "triton")

    def _read(self, deadline: float, stage: str | None = None):
        """The next message, or raise WorkerCrashed blaming `stage` (the worker died, or
        `deadline` passed and it was killed)."""
        fd = self.proc.stdout.fileno()
        readable, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
        if not readable:
            self.kill()
            raise WorkerCrashed("timed out (killed)", stage, self.log_tail())
        message = read_message(fd)
        if message is None:
            raise WorkerCrashed(_describe_exit(self.proc.wait()), stage, self.log_tail())
        return message

    def wait_ready(self, timeout: float = _STARTUP_TIMEOUT_S) -> None:
        if not self.ready:
            self._read(time.monotonic() + timeout)
            self.ready = True

    def poll_ready(self) -> bool:
        """Whether it has booted, without waiting."""
        if not self.ready and select.select([self.proc.stdout.fileno()], [], [], 0)[0]:
            try:
                self.wait_ready()
            except WorkerCrashed:
                return False
        return self.ready

    def compile(self, request: dict, timeout: float) -> dict:
        self.wait_ready()
        deadline = time.monotonic() + timeout
        stage = None
        try:
            write_message(self.proc.stdin.fileno(), request)
        except (BrokenPipeError, OSError):
            raise WorkerCrashed(_describe_exit(self.proc.wait()), None, self.log_tail()) from None
        while True:
            message = self._read(deadline, stage)
            if "stage" in message:
                stage = message["stage"]
                continue
            kind = request.get("kind", "ir")
            self.served[kind] = self.served.get(kind, 0) + 1
            if "error" in message:
                raise WorkerError(message["error"])
            return message["ok"]

    def log_tail(self, limit: int = 4000) -> str:
        try:
            with open(self.log.name, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - limit))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        try:
            self.proc.stdin.close()   # the worker exits at end of input
            self.proc.wait(timeout=2)
        except Exception:  # noqa: BLE001
            self.kill()
        self.proc.stdout.close()
        self.log.close()
        try:
            os.unlink(self.log.name)
        except OSError:
            pass


def default_size() -> int:
    text = os.environ.get("LAMINA_COMPILE_WORKERS", "").strip()
    if text:
        return max(1, int(text))
    # at least 2: a training step's forward and backward graphs compile at once
    # (backend/__init__.py); workers start on demand, so one compile at a time starts one
    return min(8, max(2, (os.cpu_count() or 2) // 2))


def default_timeout() -> float:
    return float(os.environ.get("LAMINA_COMPILE_TIMEOUT", "600"))


class WorkerPool:
    def __init__(self, size: int | None = None):
        self._size = size
        self._idle: list[Worker] = []
        self._count = 0
        self._cond = threading.Condition()
        self.started = 0      # workers started over the pool's life (replacements included)
        self.crashes = 0

    @property
    def size(self) -> int:
        """The most workers at once (LAMINA_COMPILE_WORKERS, read at each request)."""
        return self._size or default_size()

    def warm(self) -> None:
        """Start a worker now (it boots in the background) unless one exists."""
        self._grow_to(1)

    def grow(self, imports: tuple[str, ...] = (), env: dict | None = None) -> None:
        """Start workers up to the pool's size now (they boot in the background, importing
        `imports` too and running their `worker_warm_up`, with `env` added to theirs)."""
        self._grow_to(self.size, imports, env)

    def _grow_to(self, n: int, imports: tuple[str, ...] = (), env: dict | None = None) -> None:
        while True:
            with self._cond:
                if self._count >= min(n, self.size):
                    return
                self._count += 1
            try:
                worker = self._start(imports, env)
            except BaseException:
                with self._cond:
                    self._count -= 1
                raise
            self._release(worker)

    def _start(self, imports: tuple[str, ...] = (), env: dict | None = None) -> Worker:
        self.started += 1
        return Worker(imports, env)

    def _acquire(self, kind: str = "ir") -> Worker:
        with self._cond:
            while True:
                for w in [w for w in self._idle if not w.alive()]:
                    self._idle.remove(w)
                    self._count -= 1
                    w.close()
                if self._idle:
                    # a booted one, the one that has served most requests of this kind (its
                    # lazy imports done), else the one booting longest
                    ready = [w for w in self._idle if w.poll_ready()]
                    w = max(reversed(ready), key=lambda w: w.served.get(kind, 0)) if ready else self._idle[0]
                    self._idle.remove(w)
                    return w
                if self._count < self.size:
                    self._count += 1
                    break
                self._cond.wait()
        try:
            return self._start()
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def _release(self, w: Worker) -> None:
        with self._cond:
            self._idle.append(w)
            self._cond.notify()

    def _discard(self, w: Worker) -> None:
        w.kill()
        w.close()
        with self._cond:
            self._count -= 1
            self.crashes += 1
            self._cond.notify()

    def compile(self, request: dict, timeout: float | None = None) -> dict:
        """Run one compile request on a worker (service/worker.py's protocol)."""
        w = self._acquire(request.get("kind", "ir"))
        try:
            reply = w.compile(request, default_timeout() if timeout is None else timeout)
        except WorkerCrashed:
            self._discard(w)
            raise
        except WorkerError:
            self._release(w)
            raise
        except BaseException:
            self._discard(w)   # interrupted mid-protocol: the worker's state is unknown
            raise
        self._release(w)
        return reply

    def workers(self) -> list[int]:
        with self._cond:
            return [w.pid for w in self._idle]

    def shutdown(self) -> None:
        with self._cond:
            idle, self._idle = self._idle, []
            self._count -= len(idle)
        for w in idle:
            w.close()


_pool: WorkerPool | None = None
_pool_lock = threading.Lock()


def get_pool() -> WorkerPool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = WorkerPool()
            atexit.register(_pool.shutdown)
        return _pool
