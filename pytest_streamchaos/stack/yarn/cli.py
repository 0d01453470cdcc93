"""The mini YARN outside pytest, so that a test can attach to it as to a cluster it did not start.

    python -m pytest_streamchaos.stack up yarn --conf-out DIR    # runs until Ctrl-C or `down`
    python -m pytest_streamchaos.stack down yarn --conf-out DIR

``up`` starts a ResourceManager and NodeManagers (:class:`~.cluster.LocalYarnCluster`), copies the
client's Hadoop conf dir to ``DIR`` (``yarn-site.xml``, ``core-site.xml``, ...: what ``--chaos-yarn-conf``
and ``HADOOP_CONF_DIR`` take) with a state file naming its own pid, prints one line when the cluster is
ready and waits for SIGINT / SIGTERM; then it stops everything it started (the reaper does it if ``up``
is killed). ``down`` sends that SIGTERM and waits until ``up`` has exited.
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
from pathlib import Path

import psutil

from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack import host as stack_host
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.yarn.cluster import LocalYarnCluster

#: written into the conf-out dir by ``up``, read by ``down``
STATE_FILE = "streamchaos-stack.json"
#: the files of the client conf dir that ``up`` publishes
CONF_FILES = ("yarn-site.xml", "core-site.xml", "capacity-scheduler.xml", "log4j.properties")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pytest_streamchaos.stack",
                                description="Bring a part of the stack up outside pytest, or take it down.")
    p.add_argument("verb", choices=("up", "down"))
    p.add_argument("what", choices=("yarn",), help="the part of the stack (yarn: a ResourceManager, NodeManagers)")
    p.add_argument("--conf-out", type=Path, help="where `up` writes the cluster's Hadoop conf dir (`down` reads it)")
    p.add_argument("--workdir", type=Path, help="the cluster's own files (default: a temporary dir, removed after)")
    p.add_argument("--nodemanagers", type=int, default=2)
    return p


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
    """Start the cluster, publish its conf dir, wait for a signal, stop everything."""
    conf_out = args.conf_out.absolute() if args.conf_out else None
    if conf_out is not None and (running := _state(conf_out)):
        raise StackError(f"a YARN is already up for {conf_out} (pid {running['pid']}); fix: "
                         f"python -m pytest_streamchaos.stack down yarn --conf-out {conf_out}")
    workdir = args.workdir.absolute() if args.workdir else Path(tempfile.mkdtemp(prefix="streamchaos-yarn-"))
    if args.workdir is None:
        stack_host.current().reaper.register_path(workdir)
    cluster = LocalYarnCluster(workdir / "yarn", args.nodemanagers)
    started = time.monotonic()
    try:
        cluster.start()
        conf_dir = _publish(cluster, conf_out)
        print(f"streamchaos: YARN up in {time.monotonic() - started:.1f}s: ResourceManager "
              f"http://{cluster.api.address}, {args.nodemanagers} NodeManagers; conf dir {conf_dir}\n"
              "stop it with Ctrl-C or: python -m "
              f"pytest_streamchaos.stack down yarn --conf-out {conf_dir}", flush=True)
        return _serve(cluster)
    finally:
        cluster.stop()
        if conf_out is not None:
            (conf_out / STATE_FILE).unlink(missing_ok=True)
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
            stack_host.current().reaper.unregister_path(workdir)


def _publish(cluster: LocalYarnCluster, conf_out: Path | None) -> Path:
    """Copy the client conf dir to ``conf_out`` with the state file; the conf dir a client should use."""
    if conf_out is None:
        return cluster.conf_dir
    conf_out.mkdir(parents=True, exist_ok=True)
    for name in CONF_FILES:
        shutil.copyfile(cluster.conf_dir / name, conf_out / name)
    me = psutil.Process()
    (conf_out / STATE_FILE).write_text(json.dumps({"pid": me.pid, "create_time": me.create_time(),
                                                   "resourcemanager": cluster.api.address,
                                                   "workdir": str(cluster.workdir)}))
    return conf_out


def _serve(cluster: LocalYarnCluster) -> int:
    """Block until SIGINT or SIGTERM (0), or until a daemon exits on its own (1, saying which)."""
    wanted = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
    while True:
        if signal.sigtimedwait(wanted, 1.0) is not None:
            print("streamchaos: stopping YARN", flush=True)
            return 0
        dead = [d for d in cluster.daemons() if d.process is not None and not d.process.alive]
        if dead and dead[0].process is not None:
            print(f"streamchaos: YARN {dead[0].name} exited with code {dead[0].process.returncode}; stopping YARN "
                  f"(log {dead[0].process.log_path})", file=sys.stderr, flush=True)
            return 1


def down(args: argparse.Namespace) -> int:
    """SIGTERM the ``up`` of ``--conf-out`` and wait until it has exited."""
    if args.conf_out is None:
        raise StackError("down needs --conf-out DIR: the dir `up` wrote its conf to")
    conf_out = args.conf_out.absolute()
    state = _state(conf_out)
    if state is None:
        raise StackError(f"no YARN is up for {conf_out} (no live `up` named in {conf_out / STATE_FILE})")
    pid = int(state["pid"])
    os.kill(pid, signal.SIGTERM)
    poll(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, 60,
         lambda _: StackError(f"`up` (pid {pid}) still running 60s after SIGTERM"), interval=0.2)
    print(f"streamchaos: YARN of {conf_out} is down")
    return 0
