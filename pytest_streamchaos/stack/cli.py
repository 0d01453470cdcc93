"""Parts of the stack outside pytest, so that a test can attach to them as to clusters it did not start.

    python -m pytest_streamchaos.stack up yarn --conf-out DIR    # runs until Ctrl-C or `down`
    python -m pytest_streamchaos.stack up kafka --conf-out DIR [--port 9092]
    python -m pytest_streamchaos.stack down yarn|kafka --conf-out DIR

``up yarn`` starts a ResourceManager and NodeManagers (:class:`~.yarn.cluster.LocalYarnCluster`) and copies
the client's Hadoop conf dir to ``DIR`` (``yarn-site.xml``, ``core-site.xml``, ...: what
``--chaos-yarn-conf`` and ``HADOOP_CONF_DIR`` take). ``up kafka`` starts the stack's KRaft brokers
(:class:`~.local.LocalKafkaCluster`; ``--port``: also a listener on ``localhost:PORT`` for a job that
hard-codes it) and prints the bootstrap address ``--chaos-kafka-bootstrap`` takes. Either writes a state
file naming its own pid (and the address) into ``DIR``, prints one line when ready and waits for SIGINT /
SIGTERM; then it stops everything it started (the reaper does it if ``up`` is killed). ``down`` sends that
SIGTERM and waits until ``up`` has exited.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack import host as stack_host
from pytest_streamchaos.stack.base import StackError

#: written into the conf-out dir by ``up``, read by ``down``
STATE_FILE = "streamchaos-stack.json"
#: the files of the client conf dir that ``up yarn`` publishes
CONF_FILES = ("yarn-site.xml", "core-site.xml", "capacity-scheduler.xml", "log4j.properties")


@dataclass
class Part:
    """A part of the stack as ``up`` runs it: how it stops, what it publishes, which of its daemons died."""

    name: str
    start: Callable[[], object]
    stop: Callable[[], None]
    publish: Callable[[Path | None], tuple[str, dict]]  #: (the ready line's detail, the state file's extra keys)
    dead: Callable[[], str | None]  #: "<daemon> exited with code N (log ...)" or None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pytest_streamchaos.stack",
                                description="Bring a part of the stack up outside pytest, or take it down.")
    p.add_argument("verb", choices=("up", "down"))
    p.add_argument("what", choices=("yarn", "kafka"),
                   help="the part of the stack (yarn: a ResourceManager, NodeManagers; kafka: KRaft brokers)")
    p.add_argument("--conf-out", type=Path, help="where `up` writes its state file (yarn: and the cluster's Hadoop "
                   "conf dir); `down` reads it")
    p.add_argument("--workdir", type=Path, help="the cluster's own files (default: a temporary dir, removed after)")
    p.add_argument("--nodemanagers", type=int, default=2)
    p.add_argument("--brokers", type=int, default=3, help="kafka: KRaft nodes (3, or 1)")
    p.add_argument("--port", type=int, default=0,
                   help="kafka: also answer on localhost:PORT (for a job that hard-codes it)")
    return p


#: the parts' proper names, for messages
NAMES = {"yarn": "YARN", "kafka": "Kafka"}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return up(args) if args.verb == "up" else down(args)
    except StackError as exc:
        print(f"streamchaos {args.verb} {args.what}: {exc}", file=sys.stderr)
        return 1


def _state(conf_out: Path) -> dict | None:
    """``up``'s state file in ``conf_out`` when the process it names is still that ``up``, else None."""
    try:
        state = json.loads((conf_out / STATE_FILE).read_text())
        proc = psutil.Process(int(state["pid"]))
        if proc.create_time() == state["create_time"]:
            return state
    except (OSError, ValueError, KeyError, TypeError, psutil.Error):
        pass
    return None


def up(args: argparse.Namespace) -> int:
    """Start the part, publish its address (and conf dir), wait for a signal, stop everything."""
    conf_out = args.conf_out.absolute() if args.conf_out else None
    if conf_out is not None and (running := _state(conf_out)):
        what = running.get("what", "yarn")
        raise StackError(f"a {NAMES.get(what, what)} is already up for {conf_out} (pid {running['pid']}); fix: "
                         f"python -m pytest_streamchaos.stack down {what} --conf-out {conf_out}")
    workdir = args.workdir.absolute() if args.workdir else Path(tempfile.mkdtemp(prefix=f"streamchaos-{args.what}-"))
    if args.workdir is None:
        stack_host.current().reaper.register_path(workdir)
    part = (_yarn if args.what == "yarn" else _kafka)(args, workdir)
    started = time.monotonic()
    try:
        part.start()
        detail, extra = part.publish(conf_out)
        if conf_out is not None:
            me = psutil.Process()
            (conf_out / STATE_FILE).write_text(json.dumps({"pid": me.pid, "create_time": me.create_time(),
                                                           "what": args.what, "workdir": str(workdir), **extra}))
        print(f"streamchaos: {part.name} up in {time.monotonic() - started:.1f}s: {detail}\n"
              "stop it with Ctrl-C or: python -m "
              f"pytest_streamchaos.stack down {args.what} --conf-out {conf_out or 'DIR'}", flush=True)
        return _serve(part)
    finally:
        part.stop()
        if conf_out is not None:
            (conf_out / STATE_FILE).unlink(missing_ok=True)
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
            stack_host.current().reaper.unregister_path(workdir)


def _yarn(args: argparse.Namespace, workdir: Path) -> Part:
    """The mini YARN; it publishes the client's Hadoop conf dir into ``--conf-out``."""
    from pytest_streamchaos.stack.yarn.cluster import LocalYarnCluster

    cluster = LocalYarnCluster(workdir / "yarn", args.nodemanagers)

    def publish(conf_out: Path | None) -> tuple[str, dict]:
        if conf_out is not None:
            conf_out.mkdir(parents=True, exist_ok=True)
            for name in CONF_FILES:
                shutil.copyfile(cluster.conf_dir / name, conf_out / name)
        return (f"ResourceManager http://{cluster.api.address}, {args.nodemanagers} NodeManagers; conf dir "
                f"{conf_out or cluster.conf_dir}", {"resourcemanager": cluster.api.address,
                                                    "workdir": str(cluster.workdir)})

    def dead() -> str | None:
        gone = [d for d in cluster.daemons() if d.process is not None and not d.process.alive]
        if not gone or gone[0].process is None:
            return None
        return f"{gone[0].name} exited with code {gone[0].process.returncode} (log {gone[0].process.log_path})"

    return Part("YARN", cluster.start, cluster.stop, publish, dead)


def _kafka(args: argparse.Namespace, workdir: Path) -> Part:
    """The stack's KRaft brokers; ``--port``: also a listener on ``localhost:PORT`` for the job."""
    from pytest_streamchaos.stack.local import LocalKafkaCluster

    cluster = LocalKafkaCluster(workdir / "kafka", args.brokers)

    def start() -> None:
        cluster.start()
        if args.port:
            cluster.listen(args.port)

    def publish(conf_out: Path | None) -> tuple[str, dict]:
        if conf_out is not None:
            conf_out.mkdir(parents=True, exist_ok=True)
        job = f", the job's clients also at localhost:{args.port}" if args.port else ""
        return (f"{args.brokers} brokers; --chaos-kafka-bootstrap={cluster.bootstrap_servers}{job}",
                {"bootstrap": cluster.bootstrap_servers, "port": args.port})

    def dead() -> str | None:
        gone = [n for n in cluster.nodes if not n.alive]
        return f"broker {gone[0].node_id} exited" if gone else None

    return Part("Kafka", start, cluster.stop, publish, dead)


def _serve(part: Part) -> int:
    """Block until SIGINT or SIGTERM (0), or until a daemon exits on its own (1, saying which)."""
    wanted = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
    while True:
        if signal.sigtimedwait(wanted, 1.0) is not None:
            print(f"streamchaos: stopping {part.name}", flush=True)
            return 0
        if (dead := part.dead()) is not None:
            print(f"streamchaos: {part.name} {dead}; stopping {part.name}", file=sys.stderr, flush=True)
            return 1


def down(args: argparse.Namespace) -> int:
    """SIGTERM the ``up`` of ``--conf-out`` and wait until it has exited."""
    if args.conf_out is None:
        raise StackError("down needs --conf-out DIR: the dir `up` wrote its conf to")
    conf_out = args.conf_out.absolute()
    state = _state(conf_out)
    if state is None:
        raise StackError(f"no {args.what} is up for {conf_out} (no live `up` named in {conf_out / STATE_FILE})")
    pid = int(state["pid"])
    os.kill(pid, signal.SIGTERM)
    poll(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, 60,
         lambda _: StackError(f"`up` (pid {pid}) still running 60s after SIGTERM"), interval=0.2)
    print(f"streamchaos: {args.what} of {conf_out} is down")
    return 0
