"""The checkpoint gate: land a fault exactly at a micro-batch phase of a local-filesystem checkpoint.

Polling a checkpoint directory loses most races (a ``foreachBatch`` writer's window between its
files' ``_SUCCESS`` and ``commits/N`` is a few milliseconds). The gate does not race: a tiny shared
library (``checkpoint_gate.c``, built once per machine with gcc into the plugin's cache, pinned by
the hash of its source) is preloaded into the job's JVMs (``LD_PRELOAD``: the driver through its
environment, the executors through ``spark.executorEnv``) and, only while the harness has armed it,
holds the thread that renames a checkpoint file into place -- before or after the rename -- and says
so in a marker file. The harness then fires the fault at a process that cannot move past that point::

    gate = CheckpointGate(workdir / "gate")           # builds the library on first use
    launch(env=gate.env(), conf=gate.executor_conf())
    gate.arm("commits", "before", 7, scope)           # batch >= 7 of the query checkpointed at scope:
                                                      # its output visible, its commit not written
    held = gate.wait_held(timeout=30)                 # Hold(log="commits", batch=7, pid=..., t=...)
    job.kill(); gate.release()                        # the kill lands before commits/7 exists
    gate.disarm()                                     # before the restart: the replay passes through

What each rule means (docs/explore.md): ``commits before N`` output visible, not committed; ``commits
after N`` between batches; ``offsets after N`` offsets logged, no task yet; ``state before V`` a task
committing version V (= batch V - 1) of its state store -- ``V.delta`` (the default HDFS-backed store),
``V.changelog`` (RocksDB with changelog checkpointing), ``V.zip`` (RocksDB without), ``V_<id>.*`` (state
checkpoint format v2); ``task before 0`` an executor's task finishing its output (a shuffle file, or a
file-writing task's commit: tasks running, nothing visible). Only the first
matching rename of an arming holds; the gate acts on local paths only (an ``hdfs://`` checkpoint
renames by RPC: fall back to polling).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from pytest_streamchaos.assets import cache_dir
from pytest_streamchaos.jsonfile import write_json
from pytest_streamchaos.machine import commands
from pytest_streamchaos.poll import poll
from pytest_streamchaos.protocols import Held
from pytest_streamchaos.stack.base import StackError

SOURCE = Path(__file__).with_name("checkpoint_gate.c")
LIBRARY = "libstreamchaos_gate.so"
ENV_DIR = "STREAMCHAOS_GATE_DIR"
ENV_MAX_HOLD = "STREAMCHAOS_GATE_MAX_HOLD_MS"
LOGS = ("commits", "offsets", "state", "task")
WHENS = ("before", "after")
#: the threads that rename a file of a task's commit, as the kernel names them (15 characters, blanks as the
#: gate writes them): the task's own (``Executor task launch worker for task ...``), and the pool of Spark 4's
#: ``ChecksumCheckpointFileManager`` (``ChecksumCheckpointFileManager-Thread-<n>``), which writes a file and
#: its checksum side by side when state checkpoint format v2 is on, while the task waits for it in
#: ``ChecksumCancellableFSDataOutputStream.close`` (a jstack of a held 4.2 executor shows the task there)
TASK_THREADS = ("Executor_task", "ChecksumCheckpo")
#: how often the harness looks for the hold marker (the held thread waits, so this only adds latency)
POLL_S = 0.002


def _source_hash() -> str:
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]


def library_folder() -> Path:
    """``<cache>/lib/checkpoint-gate-<hash of the source>``: the built library and its ``done.json``."""
    return cache_dir() / "lib" / f"checkpoint-gate-{_source_hash()}"


def gate_library() -> Path:
    """The gate's shared library, built with gcc on first use (one build per source version per
    machine; concurrent builds are serialised by a lock file). :class:`StackError` naming the fix
    when there is no C compiler or the build fails."""
    folder = library_folder()
    lib = folder / LIBRARY
    if (folder / "done.json").is_file() and lib.is_file():
        return lib
    gcc = commands.need("gcc", "install gcc (Debian: apt-get install gcc) to build the checkpoint gate",
                        error=StackError)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / ".checkpoint-gate.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "done.json").is_file() and lib.is_file():
            return lib
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        try:
            commands.run([gcc, "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o", str(lib), str(SOURCE), "-ldl"],
                         timeout=120, fix=f"the checkpoint gate's source is {SOURCE}", error=StackError)
        except StackError:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        write_json(folder / "done.json", {"source_sha256": _source_hash(), "gcc": gcc, "built_at": time.time()})
    return lib


@dataclass(frozen=True)
class GateRule:
    """Hold the first rename of ``log``'s entry ``>= min_batch`` (``state``: state store version), ``when``
    before or after it."""

    log: str
    when: str
    min_batch: int

    def __post_init__(self) -> None:
        if self.log not in LOGS or self.when not in WHENS or self.min_batch < 0:
            raise ValueError(f"gate rule {self}: log one of {LOGS}, when one of {WHENS}, min_batch >= 0")


@dataclass(frozen=True)
class Hold:
    """A thread the gate holds: where (``log`` entry ``batch``, ``when``), who (``pid``, ``tid``, and the
    ``thread``'s name as the kernel has it: 15 characters, blanks as ``_``, ``Executor_task_l`` for a Spark
    task, ``?`` unknown), since when (``t``, epoch seconds on the harness's clock) and the file it renames
    (``path``)."""

    log: str
    when: str
    batch: int
    pid: int
    tid: int
    t: float
    path: str
    thread: str = "?"

    @classmethod
    def parse(cls, text: str) -> Hold | None:
        parts = text.strip().split(" ", 7)
        if len(parts) != 8:
            return None  # not written through yet (it is linked complete, so this is another file)
        log, when, n, pid, tid, ns, thread, path = parts
        return cls(log, when, int(n), int(pid), int(tid), int(ns) / 1e9, path, thread)

    @property
    def in_task(self) -> bool | None:
        """Whether the held thread renames for a task, which waits for it (:data:`TASK_THREADS`: a task's
        own thread, or the pool a task hands its state file and checksum to); None: its name could not be read."""
        return None if self.thread == "?" else self.thread.startswith(TASK_THREADS)


def local_scope(scope: str | None) -> str | None:
    """A checkpoint directory as the gate compares it with a rename's target directory: canonical (the JVM
    renames by the path it was given; the library resolves it), None for none or one not on this host's
    file system (a URL)."""
    if not scope or "://" in scope:
        return None
    return os.path.realpath(scope)


class CheckpointGate:
    """The harness's side of the gate: its control directory, the environment that preloads it, and
    arm / wait / release / disarm. One gate per run; :meth:`close` disarms and removes the directory."""

    def __init__(self, directory: str | os.PathLike, library: Path | None = None, max_hold_s: float = 120.0) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.library = library if library is not None else gate_library()
        self.max_hold_ms = int(max_hold_s * 1000)
        self._lock = threading.Lock()
        self._gen = 0  #: the current arming's number (0: never armed)
        #: every hold a moment detector reported (``faults.gate_moments.gated_moment``), in order
        self.holds: list[Held] = []  #: every hold the moment detectors reported, in order

    def env(self, base: str | None = None) -> dict[str, str]:
        """The driver's environment additions (``base``: an ``LD_PRELOAD`` the job already has, kept)."""
        preload = f"{self.library} {base}" if base else str(self.library)
        return {"LD_PRELOAD": preload, ENV_DIR: str(self.dir), ENV_MAX_HOLD: str(self.max_hold_ms)}

    def executor_conf(self) -> dict[str, str]:
        """Spark conf that preloads the gate into the executors (for the state stores' commits)."""
        return {f"spark.executorEnv.{k}": v for k, v in self.env().items()}

    def _write(self, name: str, text: str) -> None:
        tmp = self.dir / f".{name}.tmp"
        tmp.write_text(text)
        os.replace(tmp, self.dir / name)

    def _remove(self, *names: str) -> None:
        for n in names:
            (self.dir / n).unlink(missing_ok=True)

    def arm(self, log: str, when: str, min_batch: int, scope: str | None = None) -> None:
        """Hold the next rename of ``log``'s entry ``>= min_batch``, ``when`` before or after it
        (:class:`GateRule`), and, given the ``scope`` (the query's checkpoint directory), only one in that
        checkpoint: a job's other queries renames the same numbers in theirs (a console query's temporary
        checkpoint beside the tracked Kafka query's). A previous hold is forgotten, a thread it held released."""
        rule = GateRule(log, when, min_batch)
        canonical = local_scope(scope)
        where = f" {canonical}" if canonical else ""
        with self._lock:
            self._remove("held", f"release.{self._gen}")
            self._gen += 1  # a thread held by the previous arming sees another number: it goes on
            self._write("arm", f"{rule.log} {rule.when} {rule.min_batch} {self._gen}{where}\n")

    def held(self) -> Hold | None:
        """The hold of this arming, or None yet."""
        try:
            return Hold.parse((self.dir / "held").read_text())
        except FileNotFoundError:
            return None

    def wait_held(self, timeout: float, stop: threading.Event | None = None) -> Hold | None:
        """Wait until a thread is held (its :class:`Hold`), ``stop`` is set or ``timeout`` passes (None)."""
        def found() -> Hold | bool | None:
            return True if stop is not None and stop.is_set() else self.held()

        try:
            got = poll(found, timeout, lambda _: TimeoutError(), interval=POLL_S, clock=time.time)
        except TimeoutError:
            return None
        return got if isinstance(got, Hold) else None

    def release(self) -> None:
        """Let the thread this arming holds go on (the rule stays armed, and spent: the hold marker stays)."""
        with self._lock:
            self._write(f"release.{self._gen}", "")

    def disarm(self) -> None:
        """No rule armed, no thread held, no marker: renames pass through."""
        with self._lock:
            self._remove("arm", "held", f"release.{self._gen}")

    def close(self) -> None:
        self.disarm()
        shutil.rmtree(self.dir, ignore_errors=True)
