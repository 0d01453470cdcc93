"""Phase 1: the run's topics -- its own, named per run, by default; the exact names a job hard-codes
when the test names them (deleted and created anew: nothing of an earlier run is read)."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pytest_streamchaos.facts import Topics
from pytest_streamchaos.job.eos import control_topic_for
from pytest_streamchaos.observe.output_names import OutputKind, output_kind
from pytest_streamchaos.runner.spec import RunSpec
from pytest_streamchaos.stack.base import KafkaCluster

log = logging.getLogger(__name__)

#: the output topics the run creates: the broker stamps each record when it appends it, so the collector
#: knows when the job's sink wrote (which micro-batch an output belongs to, whether an aimed fault hit)
#: without its own read lag and whatever timestamps the job sets
OUTPUT_TOPIC_CONFIG = {"message.timestamp.type": "LogAppendTime"}


@dataclass
class RunTopics:
    """The topics of one run and how each side reaches the brokers: the harness directly
    (``bootstrap``), the job through its own links (``job_bootstrap``)."""

    bootstrap: str
    job_bootstrap: str
    inputs: list[str]
    out_topic: str | None = None
    side_topic: str | None = None
    #: the topics made for this run alone, deleted after it (the session's cluster stays small)
    own: list[str] = field(default_factory=list)

    def outputs(self) -> list[str]:
        """The run's own output topics (main and late side output) that exist: what the collector
        reads when the test names no outputs."""
        return [t for t in (self.out_topic, self.side_topic) if t]

    def watched(self) -> list[str]:
        """The topics whose leaders and ISR the timeline follows: the inputs and the main output."""
        return [*self.inputs, *([self.out_topic] if self.out_topic else [])]

    def typed(self, spec: RunSpec) -> Topics:
        """The topics as the run's history keeps them (every input when there are several or the test
        named them; the outputs the test named)."""
        return Topics(input=self.inputs[0], output=self.out_topic, side=self.side_topic,
                      inputs=list(self.inputs) if len(self.inputs) > 1 or spec.inputs is not None else None,
                      outputs=None if spec.outputs is None else list(spec.outputs))


class MakeTopics:
    """Creates the run's topics (``run``) and deletes its own ones afterwards (``forget``)."""

    def __init__(self, kafka: KafkaCluster, spec: RunSpec, tag: str) -> None:
        self.kafka = kafka
        self.spec = spec
        self.tag = tag

    def run(self) -> RunTopics:
        s, kafka = self.spec, self.kafka
        topics = RunTopics(bootstrap=kafka.bootstrap_servers, job_bootstrap=kafka.job_bootstrap_servers, inputs=[])
        wanted: list[tuple[str, int, dict[str, str] | None, bool]] = []  # name, partitions, config, the run's own
        if s.inputs is None:
            topics.inputs = [self._own_name("in")]
            wanted.append((topics.inputs[0], s.partitions, None, True))
        else:
            topics.inputs = list(s.inputs)
            wanted += [(t, s.partitions, None, False) for t in s.inputs]
        fixed_out = [o for o in (s.outputs or []) if output_kind(o) == OutputKind.KAFKA]
        if s.outputs is None:
            topics.out_topic, topics.side_topic = self._own_name("out"), self._own_name("late")
            wanted += [(topics.out_topic, s.partitions, OUTPUT_TOPIC_CONFIG, True), (topics.side_topic, 1, None, True),
                       # the exactly-once sink's commit log (job.kafka_sink): it must exist before the query starts
                       (control_topic_for(topics.out_topic), 1, None, True)]
        else:
            wanted += [(t, s.partitions, OUTPUT_TOPIC_CONFIG, False) for t in fixed_out]
            topics.out_topic = fixed_out[0] if fixed_out else None
        self._create(topics, wanted)
        return topics

    def _own_name(self, role: str) -> str:
        return f"streamchaos-{self.tag}-{role}"

    def _create(self, topics: RunTopics, wanted: list[tuple[str, int, dict[str, str] | None, bool]]) -> None:
        """Create every topic at once: each creation waits for every broker to show its partitions led and
        in sync (several metadata round trips), and one after the other they took 0.5 s of every run. A name
        given twice (an input that is an output too) is made once, as its last mention says. When one fails,
        the run's own ones that were made are deleted again before its error is raised."""
        unique = {name: (name, n, config, own) for name, n, config, own in wanted}
        with ThreadPoolExecutor(max_workers=len(unique), thread_name_prefix="streamchaos-topic") as pool:
            futures = [(pool.submit(self.kafka.create_topic, name, partitions=n, config=config), own)
                       for name, n, config, own in unique.values()]
        failed: BaseException | None = None
        for future, own in futures:
            try:
                name = future.result()
            except BaseException as exc:  # the first failure is raised once the others are noted
                failed = failed or exc
                continue
            if own:
                topics.own.append(name)
        if failed is not None:
            self.forget(topics)
            raise failed

    def forget(self, topics: RunTopics) -> None:
        """Delete the run's own topics: the next run makes its own."""
        for name in topics.own:
            try:
                self.kafka.delete_topic(name)
            except Exception as exc:  # a broker a fault left down: the topic stays, harmless
                log.warning("could not delete the run's topic %s: %s", name, exc)
