"""Defects planted on purpose, for the plugin's false-verdict hunt (benchmarks/hunt_false_verdicts.py): with
``DROP_EVERY=N`` a job loses every record whose id is divisible by N (a buggy filter), with ``REPEAT_EVERY=M`` it
writes every record whose id is divisible by M twice (a bad explode); unset, the job is correct. Ids divisible by
both are dropped."""

import os

from pyspark.sql import DataFrame
from pyspark.sql.functions import array, col, explode, lit, when

DROP_EVERY = int(os.environ.get("DROP_EVERY") or 0)
REPEAT_EVERY = int(os.environ.get("REPEAT_EVERY") or 0)


def planted(rows: DataFrame, id_column: str) -> DataFrame:
    """``rows`` with the defects the environment asks for, by their ``id_column``."""
    if DROP_EVERY:
        rows = rows.where(col(id_column).cast("long") % DROP_EVERY != 0)
    if REPEAT_EVERY:
        copies = when(col(id_column).cast("long") % REPEAT_EVERY == 0, array(lit(0), lit(1))).otherwise(array(lit(0)))
        rows = rows.withColumn("_copy", explode(copies)).drop("_copy")
    return rows
