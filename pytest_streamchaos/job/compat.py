"""What the job side uses that exists on only one Spark line, detected where it is used.

The plugin runs on pyspark 3.5 (Scala 2.12) and 4.x (Scala 2.13) (docs/spark-versions.md). Each
helper here asks the DataFrame or the module for the feature rather than comparing version numbers, so
a backport (or a removal) is followed without a change here. Job side: imports nothing of the harness.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:  # the job side imports them where it runs, not at import
    import pyarrow as pa
    from pyspark.sql import DataFrame


class _ArrowBatches(Protocol):
    """Spark 3.5's DataFrame as ``toPandas`` reads it: a private method Spark 4's types do not have."""

    def _collect_as_arrow(self) -> list[pa.RecordBatch]: ...


def to_arrow(df: DataFrame) -> pa.Table:
    """The rows of ``df`` as one ``pyarrow.Table`` on the driver.

    ``DataFrame.toArrow`` is new in Spark 4.0; on 3.5 the same table is built from the Arrow record
    batches that PySpark's ``toPandas`` collects (``_collect_as_arrow``, there since Spark 2.3), with the
    schema given explicitly so that an empty DataFrame still has its columns.
    """
    native = getattr(df, "toArrow", None)
    if native is not None:
        return native()
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    return pa.Table.from_batches(cast(_ArrowBatches, df)._collect_as_arrow(), schema=to_arrow_schema(df.schema))
