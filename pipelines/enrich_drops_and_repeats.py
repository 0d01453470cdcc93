"""A deliberately BROKEN enrichment job, for testing the plugin's verdicts. Do not copy it.

It is ``enrich_at_least_once.py`` with two bugs planted at known places:

* it **drops** every input whose id is divisible by 97 (as a buggy filter would): these ids are
  *lost*;
* it **repeats** every input whose id is divisible by 89 (as a bad explode/join would): each such id
  appears twice in the output, i.e. one *duplicate* each.

Ids divisible by both (multiples of 8633) are dropped, not repeated. Everything else is correct, so a
validator must report exactly: lost = {id : id % 97 == 0}, duplicates = {id : id % 89 == 0 and
id % 97 != 0} (once each), and the delivered guarantee "none" (neither at-least-once nor at-most-once).
"""

# the correct job's parsing and enrichment; the bugs are planted in between
from enrich_at_least_once import enrich, parse, read_input
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pytest_streamchaos.job import job_config

DROP_DIVISOR = 97
REPEAT_DIVISOR = 89


def broken_enrich(records):
    """The enrichment with the two planted bugs."""
    kept = records.where(F.col("id") % DROP_DIVISOR != 0)  # BUG 1: loses ids divisible by 97
    copies = F.when(F.col("id") % REPEAT_DIVISOR == 0, F.array(F.lit(0), F.lit(1))).otherwise(F.array(F.lit(0)))
    repeated = kept.withColumn("copy", F.explode(copies)).drop("copy")  # BUG 2: ids divisible by 89 twice
    return enrich(repeated)


def main() -> None:
    cfg = job_config()
    spark = SparkSession.builder.appName("enrich_drops_and_repeats").getOrCreate()
    raw = read_input(spark, cfg)
    servers, topic = cfg.bootstrap_servers, cfg.output_topic
    query = (broken_enrich(parse(raw)).writeStream
             .format("kafka")
             .option("kafka.bootstrap.servers", servers)
             .option("topic", topic)
             .option("checkpointLocation", cfg.checkpoint_dir)
             .trigger(processingTime=cfg.trigger_interval)
             .queryName("enrich_drops_and_repeats")
             .start())
    query.awaitTermination()


if __name__ == "__main__":
    main()
