"""Stateless enrichment, exactly-once: the job of ``enrich_at_least_once.py`` with a transactional sink.

Same input, same output records. The sink (:class:`ExactlyOnceKafkaSink`) writes each micro-batch
as one Kafka transaction together with a commit marker on ``<output topic>.streamchaos-commits``
(one partition; it must exist before the query starts). After a crash, a replayed batch that was
already committed is skipped, and a restarted driver fences the old one. Read the output with
``isolation.level=read_committed``: records of aborted transactions are never shown.

STREAMCHAOS_TRANSACTIONAL_ID, if set, is the sink's transactional id (keep it stable across restarts
of one query; the default is derived from the output topic).
"""

# the same parsing and enrichment; only the sink differs (the pipelines folder is on the job's path)
from enrich_at_least_once import enrich, parse, read_input
from pyspark.sql import SparkSession

from pytest_streamchaos.job import ExactlyOnceKafkaSink, job_config


def main() -> None:
    cfg = job_config()
    spark = SparkSession.builder.appName("enrich_exactly_once").getOrCreate()
    raw = read_input(spark, cfg)
    sink = ExactlyOnceKafkaSink(cfg.bootstrap_servers, cfg.output_topic, transactional_id=cfg.transactional_id)
    query = (enrich(parse(raw)).writeStream
             .foreachBatch(sink)
             .option("checkpointLocation", cfg.checkpoint_dir)
             .trigger(processingTime=cfg.trigger_interval)
             .queryName("enrich_exactly_once")
             .start())
    try:
        query.awaitTermination()
    finally:
        sink.close()


if __name__ == "__main__":
    main()
