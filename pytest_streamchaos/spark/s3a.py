"""S3A for the user's job: the ``s3a://`` paths it names, ``hadoop-aws`` of the installed pyspark's Hadoop, and the
job's own S3A settings that cannot run here -- what a job on object storage needs, read from what it is.

**Which jobs** (:func:`find`): one whose code (its script and the local modules it imports), arguments, conf or
``delta:`` outputs name an ``s3a://<bucket>/...`` path. Such a job runs on the stack's object store (SeaweedFS,
``stack/s3``): the store is started, every bucket it names is created, and the launcher passes the ``fs.s3a.*``
settings of the store's endpoint -- the job's code stays as it is, as on a cluster whose ``core-site.xml``
names the endpoint.

**The jars** (:func:`s3a_jars`): ``org.apache.hadoop:hadoop-aws`` of the Hadoop client pyspark ships
(``hadoop-client-api-3.5.0.jar`` in pyspark 4.2: ``hadoop-aws:3.5.0``; 3.3.4 in pyspark 3.5), with the AWS SDK
modules S3A uses rather than the SDK's bundle (:data:`~pytest_streamchaos.machine.artifacts.S3A_SDK`), resolved
once per machine into the plugin's cache like Spark's Kafka connector and given as ``spark.jars``.

**What is refused** (:func:`refusal`, before anything starts, in one line naming the fix): a bucket name S3
refuses, and an ``fs.s3a.endpoint`` the job sets itself (in its code or its conf), which would take its
requests off this machine, or to a store that is not the stack's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_streamchaos.machine import artifacts
from pytest_streamchaos.machine.steps import Step, spark_home_step
from pytest_streamchaos.stack.s3.ops import bucket_of, bucket_refusal

#: an ``s3a://`` URL in code, an argument or a conf value
URL = re.compile(r"""s3a://[^\s"'`,;)\]/]+[^\s"'`,;)\]]*""")
#: a job's own endpoint: ``fs.s3a.endpoint`` (or a bucket's, ``fs.s3a.bucket.<b>.endpoint``) and its value
ENDPOINT = re.compile(r"""(?:spark\.hadoop\.)?fs\.s3a\.(?:bucket\.[\w.-]+\.)?endpoint["']\s*[,:=]\s*f?"""
                      r"""["']([^"']+)["']""")
#: the conf keys that name an endpoint
_ENDPOINT_KEY = re.compile(r"(?:spark\.hadoop\.)?fs\.s3a\.(?:bucket\.[\w.-]+\.)?endpoint")


@dataclass(frozen=True)
class S3Use:
    """The ``s3a://`` paths a job names, each with where (``job.py:12``, ``args``, ``conf <key>``, ``outputs``)."""

    urls: tuple[tuple[str, str], ...]

    @property
    def buckets(self) -> list[str]:
        """The buckets the paths name, each once, in order."""
        return list(dict.fromkeys(b for b in (bucket_of(u) for u, _ in self.urls) if literal(b)))

    def __bool__(self) -> bool:
        return bool(self.urls)

    def first(self) -> str:
        """``s3a://lake/orders (job.py:12)``: for messages."""
        url, where = self.urls[0]
        return f"{url} ({where})"


def find(sources: Sequence[Path], conf: Mapping[str, str] = {}, args: Sequence[str] = (),
         outputs: Sequence[str] = ()) -> S3Use:
    """The ``s3a://`` paths the job's code (``sources``), ``args``, ``conf`` and outputs name."""
    found: list[tuple[str, str]] = []
    for path in sources:
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        found += [(m.group(0), f"{path.name}:{n}") for n, line in enumerate(lines, 1) for m in URL.finditer(line)
                  if not line.lstrip().startswith("#")]
    found += [(m.group(0), "args") for a in args for m in URL.finditer(str(a))]
    found += [(m.group(0), f"conf {k}") for k, v in conf.items() for m in URL.finditer(str(v))]
    found += [(m.group(0), "outputs") for o in outputs for m in URL.finditer(o)]
    return S3Use(tuple(dict.fromkeys(found)))


def literal(bucket: str) -> bool:
    """Whether a bucket is written out (not a field of a format string the code fills in)."""
    return bool(bucket) and not any(c in bucket for c in "{}%$")


def own_endpoints(sources: Sequence[Path], conf: Mapping[str, str]) -> list[tuple[str, str]]:
    """The S3A endpoints the job sets itself: ``(value, where)``, from its code and its conf."""
    found = [(str(v), f"conf {k}") for k, v in conf.items() if _ENDPOINT_KEY.fullmatch(k)]
    for path in sources:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        found += [(m.group(1), f"{path.name}:{text.count(chr(10), 0, m.start()) + 1}") for m in ENDPOINT.finditer(text)]
    return found


def refusal(use: S3Use, sources: Sequence[Path], conf: Mapping[str, str]) -> str | None:
    """Why the job cannot run on the stack's object store (one line, the fix named), None when it can."""
    for url, where in use.urls:
        bucket = bucket_of(url)
        if bucket and not literal(bucket):
            continue  # computed in the code (an f-string's field): the job's own business
        why = bucket_refusal(bucket) if bucket else "it names no bucket"
        if why:
            return (f"{url} ({where}): S3 refuses the bucket name {bucket!r}: {why}. Fix: name the bucket as S3 "
                    "does (3-63 lowercase letters, digits, '.' and '-', e.g. 'lake-bronze')")
    for value, where in own_endpoints(sources, conf):
        return (f"the job sets fs.s3a.endpoint to {value} ({where}): its S3 requests would go there, off this "
                "machine or to a store that is not the stack's. Fix: take the setting out of the job (a cluster's "
                "core-site.xml names the endpoint; here the launcher gives the stack's store)")
    return None


# -- the jars ----------------------------------------------------------------------------------------------------

def s3a_set(spark_home: Path) -> artifacts.JarSet:
    """S3A's jar set for the Spark distribution at ``spark_home``, minus what it ships."""
    jars = spark_home / "jars"
    return artifacts.hadoop_aws_jars(artifacts.hadoop_client_version(jars), sorted(artifacts.artifacts_in(jars)))


def s3a_jars(spark_home: Path, progress: Callable[[str], None] | None = None, java: str | None = None,
             announce: bool = True) -> list[Path]:
    """S3A's jars for the installed pyspark, resolved on first use (:class:`~..machine.artifacts.ResolutionError`
    naming the fix when they cannot be)."""
    return artifacts.resolve(s3a_set(spark_home), progress, java=java, announce=announce)


def needs_s3a(sources: Sequence[Path], conf: Mapping[str, str], outputs: Sequence[str] = ()) -> bool:
    """Whether the job needs S3A's jars: it names an ``s3a://`` path, or its conf has S3A's settings (the run's
    store gives them)."""
    return bool(find(sources, conf, (), outputs)) or any(k.startswith("spark.hadoop.fs.s3a.") for k in conf)


def prepare_steps(line: Callable[[str], None]) -> dict[str, Step]:
    """The ``s3`` storage's step of ``prepare`` for the job's side: S3A's jars of the installed Spark line."""
    return {"s3a": spark_home_step("S3A (hadoop-aws)", lambda home: artifacts.is_resolved(s3a_set(home)),
                                   lambda home: s3a_jars(home, line, announce=False))}
