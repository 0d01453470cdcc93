"""Old import path of :mod:`pytest_streamchaos.job.kafka_sink` (the job side moved to its own package).

The module object is the same (``sys.modules`` maps both names to it), so classes, private
names and monkeypatches agree whichever path imported them.
"""

import sys

from pytest_streamchaos.job import kafka_sink

sys.modules[__name__] = kafka_sink
