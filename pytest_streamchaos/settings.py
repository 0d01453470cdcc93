"""Plugin settings: one table of command-line options and ini keys, resolved once per session.

A command-line option wins over the ini key, which wins over the default.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import pytest

from pytest_streamchaos import deprecation, managers, storages
from pytest_streamchaos.analysis.spelling import did_you_mean

#: the stack backends by name
BACKENDS: tuple[str, ...] = ("local", "docker")

#: ``--chaos-save`` without a name: name the baseline after the commit and the time
AUTO = "auto"
#: ``--chaos-compare`` without a name: the latest saved baseline
LATEST = "latest"


@dataclass(frozen=True)
class Option:
    name: str  #: ini key; the command-line flag is ``--chaos-<name with dashes>``
    help: str
    default: Any
    type: type = str
    choices: tuple[str, ...] | None = None
    #: the value of the flag given without one (``--chaos-save``); None: the flag needs a value
    const: Any = None


#: every option as written here; :func:`options` fills in the registries' choices
_OPTIONS: tuple[Option, ...] = (
    Option("backend", "stack backend: 'local' (processes on this machine) or 'docker' (each node in a container; "
           "docs/docker-backend.md)", "local", str),
    Option("docker_image", "docker backend: the image of the Spark and broker containers (default: one built on "
           "this machine with no pull; the host's JDK and Python are mounted into it)", "", str),
    Option("spark", "Spark's cluster manager: {choices}; @pytest.mark.chaos(spark=...) per test", managers.DEFAULT,
           str),
    Option("connect_port", "where the Spark Connect server of a run on spark='connect' listens on 127.0.0.1 (the job's "
           "client reaches it there: SPARK_REMOTE, or a hard-coded sc://localhost:15002)", 15002, int),
    Option("yarn_conf", "an existing YARN to run the job on, by its Hadoop conf dir (the one with yarn-site.xml); the "
           "plugin starts no YARN then and refuses the faults that need the daemons' processes. HADOOP_CONF_DIR is "
           "not read for this: a chaos test attaches only to the cluster named here (implies --chaos-spark=yarn)",
           "", str),
    Option("kafka_bootstrap", "an existing Kafka to run the job against, by its bootstrap address (host:port[,...]): "
           "the plugin starts no brokers then; the generator, the collector, the job and the topics' admin client use "
           "it, and the faults that need the brokers' hosts (kill_broker, isolate_broker, a broker's pause, network "
           "faults on the Kafka links) are refused", "", str),
    Option("workers", "number of Spark workers in the session's cluster", 2, int),
    Option("worker_cores", "cores each Spark worker offers", 1, int),
    Option("worker_memory", "memory each Spark worker offers (Spark size string)", "1g", str),
    Option("kafka_brokers", "number of Kafka nodes (broker + KRaft controller) in the session's cluster: 3 "
           "(replication factor 3, min.insync.replicas=2, so a broker fault is a real leader election) or 1 (a "
           "lighter stack, replication factor 1)", 3, int),
    Option("ha", "run two Spark masters with ZooKeeper recovery (spark.deploy.recoveryMode=ZOOKEEPER)",
           False, bool),
    Option("java_home", "JAVA_HOME for Spark's JVMs (default: $JAVA_HOME, else java on PATH)", "", str),
    Option("jit", "JIT compiler of the job's driver and executor JVMs: 'quick' (C1 only, -XX:TieredStopAtLevel=1: "
           "about 5 s less start-up per run on a 2-core machine, where C2's compiler threads compete with the "
           "job; and the class path's classes loaded unverified, as Spark's daemons load them) or 'full' (the "
           "JVM's default tiered compilation and verification); a job's own -XX:*Tiered* options win",
           "quick", str, choices=("quick", "full")),
    Option("checkpoint", "where every chaos run keeps its checkpoint unless its JobSetup(checkpoint=...) says: "
           "{choices}", storages.DEFAULT, str),
    Option("start_timeout", "seconds to wait for the stack to come up", 90.0, float),
    Option("report", "write every chaos run of the session as JSON to this path", "", str),
    Option("kafka_port", "a fixed port on 127.0.0.1 where the Kafka cluster also answers the job's clients as a "
           "bootstrap server, for jobs that hard-code e.g. localhost:9092 (0: none)", 0, int),
    Option("seed", "workload seed of every chaos run (default: a stable hash of the test id, so a run "
           "replays the same records; each run's JSON records the seed it used)", "", str),
    # regression gates (report/baseline.py), modelled on pytest-benchmark's save / compare
    Option("storage", "directory where --chaos-save keeps baselines", ".chaos", str),
    Option("save", "save every chaos run of the session as a baseline under --chaos-storage, named NAME "
           "(without a value: the git commit and the time)", "", str, const=AUTO),
    Option("compare", "compare every chaos run with a saved baseline: NAME, number (0003) or path; without a "
           "value: the latest saved", "", str, const=LATEST),
    Option("compare_fail", "fail the session when a metric got worse than the baseline beyond a threshold: "
           "METRIC:N% (relative) or METRIC:N (absolute, in the metric's unit), comma-separated; e.g. "
           "downtime:20%,lost:0,latency.p99:0.5 (implies --chaos-compare)", "", str),
    Option("repeat", "run every chaos scenario N times and report medians with their spread "
           "(@pytest.mark.chaos(repeat=N) per test)", 1, int),
    Option("report_dir", "write each run's JSON and timeline picture (PNG, needs matplotlib) to this directory",
           "", str),
    # the schedule search (docs/explore.md)
    Option("explore", "explore every chaos test with its own fault marks as the fault set and a budget of N "
           "schedules (0: only tests marked @explore)", 0, int),
    Option("replay", "run exactly the fault schedule of a replay token (the `replay:` line of a test @explore "
           "falsified) for the test it names", "", str),
    Option("explore_seconds", "bound every explored test's whole search (control, exploring, confirming, shrinking "
           "runs) to this many seconds, over what its @explore or profile says (0: no bound)", 0.0, float),
    Option("explore_profile", "the explore profile (ini streamchaos_explore_profiles) whose knobs every explored "
           "test takes where its @explore says nothing, e.g. ci or nightly", "", str),
    Option("fresh_reference", "make every reference run (chaos.run(..., reference=True)) again instead of reusing "
           "the one kept in pytest's cache from an earlier session; the new one is kept for the next (--cache-clear "
           "drops them all; docs/reference.md)", False, bool),
    Option("history", "'fresh' (a job of its own for every chaos.run) or 'shared': a test module's plain chaos.runs "
           "of one job, with the same arguments, play their faults one after another on one running job, each "
           "judged in its own window and the whole history checked at the module's end (docs/shared-history.md)",
           "fresh", str, choices=("fresh", "shared")),
    Option("explore_db", "where explored tests remember their found and flaky schedules and how far the search got: "
           "'' (pytest's cache: --cache-clear forgets), a directory, or 'off'", "", str),
)
#: the options whose choices are a registry's entries, by option: their names and help, read when asked (a backend
#: added to :data:`~pytest_streamchaos.managers.MANAGERS` or :data:`~pytest_streamchaos.storages.STORAGES` is a
#: choice with no edit here)
_FROM_REGISTRY: dict[str, Callable[[], tuple[tuple[str, ...], str]]] = {
    "spark": lambda: (tuple(managers.MANAGERS), managers.choices_help()),
    "checkpoint": lambda: (tuple(storages.STORAGES), storages.choices_help()),
}


def options() -> tuple[Option, ...]:
    """Every option, those of :data:`_FROM_REGISTRY` with their registry's choices and help as it is now."""
    found = []
    for opt in _OPTIONS:
        if opt.name in _FROM_REGISTRY:
            names, help_ = _FROM_REGISTRY[opt.name]()
            opt = replace(opt, help=opt.help.format(choices=help_), choices=names)
        found.append(opt)
    return tuple(found)


#: the ini key of the explore profiles: one per line, ``name: knob=value knob=value`` (docs/explore.md)
EXPLORE_PROFILES_INI = "streamchaos_explore_profiles"


#: options under an old name (``--chaos-brokers``, ini ``streamchaos_brokers``): old name -> (new name, its entry in
#: :data:`~pytest_streamchaos.deprecation.MOVED`); the old name sets the new option, with a deprecation warning
RENAMED: dict[str, tuple[str, str]] = {
    "brokers": ("kafka_brokers", "--chaos-brokers / ini streamchaos_brokers"),
}


def _flag(opt: Option) -> str:
    return "--chaos-" + opt.name.replace("_", "-")


def _ini(opt: Option) -> str:
    return "streamchaos_" + opt.name


def addoptions(parser: pytest.Parser) -> None:
    """Register the options under their own ``streamchaos`` group, and each as an ini key."""
    group = parser.getgroup("streamchaos", "chaos testing of PySpark Structured Streaming jobs")
    for opt in options():
        # argparse %-formats option help: a literal "N%" must be written "N%%" there
        opt = replace(opt, help=opt.help.replace("%", "%%"))
        if opt.type is bool:
            group.addoption(_flag(opt), action="store_true", default=None, dest=_ini(opt),
                            help=f"{opt.help} (ini: {_ini(opt)})")
            parser.addini(_ini(opt), opt.help, type="bool", default=opt.default)
        elif opt.const is not None:  # the value is optional: --chaos-save or --chaos-save=NAME
            group.addoption(_flag(opt), action="store", nargs="?", const=opt.const, default=None, dest=_ini(opt),
                            metavar=opt.name.upper(), help=f"{opt.help} (ini: {_ini(opt)})")
            parser.addini(_ini(opt), opt.help.replace("%%", "%"), default=str(opt.default))
        else:
            group.addoption(_flag(opt), action="store", default=None, dest=_ini(opt),
                            choices=opt.choices, metavar=opt.name.upper(),
                            help=f"{opt.help} (ini: {_ini(opt)}; default: {opt.default!r})")
            parser.addini(_ini(opt), f"{opt.help} (default: {opt.default!r})", default=str(opt.default))
    for old, (_new, key) in RENAMED.items():
        renamed = Option(old, f"deprecated: {deprecation.MOVED[key].warning()}", "")
        group.addoption(_flag(renamed), action="store", default=None, dest=_ini(renamed), help=argparse.SUPPRESS)
        parser.addini(_ini(renamed), renamed.help, default="")
    parser.addini(EXPLORE_PROFILES_INI, "explore profiles, one per line: `name: budget=4 max_seconds=300 ...` "
                  "(the knobs of @explore); chosen with --chaos-explore-profile", type="linelist", default=[])


@dataclass(frozen=True)
class Settings:
    backend: str
    docker_image: str
    workers: int
    worker_cores: int
    worker_memory: str
    kafka_brokers: int
    ha: bool
    java_home: str
    jit: str
    checkpoint: str
    start_timeout: float
    report: str
    kafka_port: int
    storage: str
    save: str
    compare: str
    compare_fail: str
    repeat: int
    report_dir: str
    #: the ``--chaos-seed`` override; None = each test's own stable seed
    seed: int | None = None
    spark: str = managers.DEFAULT  #: the cluster manager, a name of :data:`~pytest_streamchaos.managers.MANAGERS`
    connect_port: int = 15002  #: the Spark Connect server's port on ``spark="connect"``
    yarn_conf: str = ""  #: an existing YARN's conf dir ("" : the mini cluster)
    #: ``--chaos-explore=N``: explore every chaos test with budget N (0: only ``@explore`` tests)
    explore: int = 0
    #: ``--chaos-replay=<token>``: the schedule to replay ("" none)
    replay: str = ""
    kafka_bootstrap: str = ""  #: an existing Kafka's bootstrap address ("": the stack's brokers)
    explore_seconds: float = 0.0  #: ``--chaos-explore-seconds``: every explored test's time bound (0: none)
    explore_profile: str = ""  #: ``--chaos-explore-profile``: the explore profile's name ("": none)
    explore_db: str = ""  #: ``--chaos-explore-db``: the search's memory ("": pytest's cache; "off")
    #: ``--chaos-fresh-reference``: make every reference again rather than reuse the cached one
    fresh_reference: bool = False
    #: ``--chaos-history``: ``shared``, a module's plain runs of one job on one running job; ``fresh``
    history: str = "fresh"

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        """Resolve every option; a bad value raises ``pytest.UsageError`` naming the flag and ini key."""
        values: dict[str, Any] = {}
        by_name = {o.name: o for o in options()}
        old_names = _renamed_options(config)
        for f in fields(cls):
            opt = by_name[f.name]
            raw = config.getoption(_ini(opt))
            if raw is None:
                raw = old_names.get(opt.name, config.getini(_ini(opt)))
            if opt.type is bool:
                values[f.name] = bool(raw)
                continue
            if opt.name == "seed":  # optional int: "" (the default) means "not set"
                values[f.name] = _optional_seed(opt, raw)
                continue
            try:
                value = opt.type(raw)
            except (TypeError, ValueError):
                raise pytest.UsageError(
                    f"{_flag(opt)} / ini {_ini(opt)}: {raw!r} is not a valid {opt.type.__name__}"
                ) from None
            if opt.name == "backend":
                _check_backend(opt, value)
            _check_value(opt, value)
            values[f.name] = value
        if values.get("yarn_conf"):
            values["spark"] = "yarn"
        return cls(**values)


#: where ``pytest_configure`` keeps the session's :class:`Settings` (``config.stash[SETTINGS_KEY]``);
#: here, not in the plugin, so that the stack fixtures read it without importing the plugin
SETTINGS_KEY = pytest.StashKey[Settings]()
#: whether a collected test may fault the job's Kafka links (set at collection; the session's Kafka builds
#: Toxiproxy for them only then, stack/kraft/links.py)
KAFKA_LINKS_KEY = pytest.StashKey[bool]()


#: the least value of a number option (the others: >= 0) and the largest of a port
MINIMUM: dict[str, float] = {"workers": 1, "worker_cores": 1, "kafka_brokers": 1, "repeat": 1}
PORTS = ("connect_port", "kafka_port")
#: a Spark size string (``1g``, ``512m``, ``2048``)
_SIZE = re.compile(r"^\d+(b|k|kb|m|mb|g|gb|t|tb|p|pb)?$", re.IGNORECASE)


def _check_value(opt: Option, value: Any) -> None:
    """A ``UsageError`` in one line naming the flag, the ini key, the value and what is allowed (the choices with a
    did-you-mean, the range, the form) unless ``value`` can work."""
    where = f"{_flag(opt)} / ini {_ini(opt)}: {value!r}"
    if opt.choices and value not in opt.choices:
        raise pytest.UsageError(f"{where} is not one of {', '.join(map(repr, opt.choices))}"
                                f"{did_you_mean(str(value), opt.choices)}")
    if opt.type in (int, float):
        least = MINIMUM.get(opt.name, 0)
        if value < least or (opt.name == "start_timeout" and value <= 0):
            raise pytest.UsageError(f"{where} must be {'> 0' if opt.name == 'start_timeout' else f'>= {least:g}'}")
        if opt.name in PORTS and value > 65535:
            raise pytest.UsageError(f"{where} is not a port (0-65535)")
    if opt.name == "worker_memory" and not _SIZE.match(str(value)):
        raise pytest.UsageError(f"{where} is not a Spark size: write e.g. 1g or 512m")
    if opt.name == "java_home" and value and not (Path(value).expanduser() / "bin" / "java").is_file():
        raise pytest.UsageError(f"{where}: no bin/java there; give a JDK's directory (the one with bin/java)")
    if opt.name == "report" and value and not Path(value).expanduser().resolve().parent.is_dir():
        raise pytest.UsageError(f"{where}: its directory does not exist; create it or name a file in one that does")
    if opt.name == "explore_db" and value not in ("", "off") and Path(value).expanduser().is_file():
        raise pytest.UsageError(f"{where} is a file; give a directory (created on first use), '' or 'off'")


def check_ini_keys(config: pytest.Config) -> None:
    """An ini key of this plugin's (``streamchaos_...``) that it does not know, refused in one line with the
    did-you-mean (pytest itself only warns, and the setting would silently not apply)."""
    unknown = getattr(config, "_get_unknown_ini_keys", None)  # pytest's own list, where it has one
    if unknown is None:
        return
    known = [_ini(o) for o in options()] + [EXPLORE_PROFILES_INI] + [_ini(Option(old, "", "")) for old in RENAMED]
    for key in sorted(k for k in unknown() if k.startswith("streamchaos_")):
        raise pytest.UsageError(f"ini {key}: not a setting of pytest-streamchaos{did_you_mean(key, known)}; its "
                                "ini keys are listed by pytest --help (the [pytest] ini-options)")


def _check_backend(opt: Option, value: str) -> None:
    """A ``UsageError`` (one line, naming the valid backends) unless ``value`` is a backend."""
    if value not in BACKENDS:
        raise pytest.UsageError(f"{_flag(opt)} / ini {_ini(opt)}: unknown backend {value!r}; valid backends: "
                                f"{', '.join(map(repr, BACKENDS))}")


def _renamed_options(config: pytest.Config) -> dict[str, object]:
    """New option name -> the value given under its old name (:data:`RENAMED`); each use warns, or after its
    window fails, naming the new form (docs/deprecations.md)."""
    given: dict[str, Any] = {}
    for old, (new, key) in RENAMED.items():
        renamed = Option(old, "", "")
        raw = config.getoption(_ini(renamed))
        if raw is None:
            raw = config.getini(_ini(renamed))
        if raw in (None, ""):
            continue
        deprecation.use(key, error=pytest.UsageError, warn=config.issue_config_time_warning)
        given[new] = raw
    return given


def _optional_seed(opt: Option, raw: object) -> int | None:
    """The seed option's value: None when unset, else a non-negative int (a UsageError names the
    flag and the ini key otherwise)."""
    if raw is None or str(raw).strip() in ("", "None"):
        return None
    try:
        value = int(str(raw).strip(), 0)  # base 0: 0x1F works too
    except ValueError:
        raise pytest.UsageError(f"{_flag(opt)} / ini {_ini(opt)}: {raw!r} is not a valid int") from None
    if value < 0:
        raise pytest.UsageError(f"{_flag(opt)} / ini {_ini(opt)}: {value!r} must be >= 0")
    return value
