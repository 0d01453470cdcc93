"""PySpark's Python worker daemon, with the imports every worker of a chaos run needs done once.

PySpark starts one daemon per executor and forks a Python worker from it for each Python task. A
freshly forked worker then imports what the task needs -- pyarrow for Arrow batches, pandas (PySpark's
Arrow evaluators import it in every worker, 0.3 s each), PySpark's worker module -- about a second per
worker on a busy 2-core machine, paid again by every worker forked cold (the first micro-batch after a
start or an executor restart). Importing them here, before the daemon forks, lets every worker inherit
them. The launcher sets ``spark.python.daemon.module`` to this module; a job that sets its own keeps
it. Job side: imports nothing of the harness.

What the workers import is seen with ``conf={"spark.executorEnv.PYTHONPROFILEIMPORTTIME": "1"}`` on
``chaos.run``: the executors' stderr (the worker's ``work/`` directory) then lists every import.
"""

from __future__ import annotations

import importlib

#: imported before forking; a module that fails to import here is left for the worker to import (and
#: fail on) itself, exactly as without this daemon
PRELOAD = ("pyarrow", "pandas", "pyspark.worker")


def preload() -> list[str]:
    """Import :data:`PRELOAD`; the names that could not be imported."""
    failed = []
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - see PRELOAD
            failed.append(name)
    return failed


if __name__ == "__main__":
    preload()
    from pyspark.daemon import manager

    manager()
