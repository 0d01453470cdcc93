"""The recorded data of one run, under its historical import path.

The types live in :mod:`pytest_streamchaos.records`, at the bottom of the import graph, so that the
recording side does not import the analysis to use them; this module keeps the old names importable.
"""

from pytest_streamchaos.records import (
    FAULT_HEALED,
    FAULT_INJECTED,
    FIRST_OUTPUT_AFTER_FAULT,
    NOT_RECOVERED_EVENT,
    RECOVERED,
    OutputRecords,
    SentRecords,
    TimelineEvent,
    Trace,
    concat_outputs,
    join_sent,
)

__all__ = [
    "FAULT_HEALED",
    "FAULT_INJECTED",
    "FIRST_OUTPUT_AFTER_FAULT",
    "NOT_RECOVERED_EVENT",
    "RECOVERED",
    "OutputRecords",
    "SentRecords",
    "TimelineEvent",
    "Trace",
    "concat_outputs",
    "join_sent",
]
