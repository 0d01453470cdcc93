"""``@explore`` in pytest: the mark, the catalogue the search gets from the fault registry, and the
loop that runs a test's body once per schedule on the warm stack (docs/explore.md).

The search itself (:mod:`pytest_streamchaos.search`) is pure; this package is what ties it to the
plugin: :mod:`.mark` (the decorator, ``--chaos-explore``, ``--chaos-replay``, every check made at
collection), :mod:`.catalogue` (the fault kinds as the search sees them, and a step as a fault spec),
:mod:`.body` (the body under one schedule, as an :class:`~pytest_streamchaos.search.schedule.Outcome`)
and :mod:`.item` (one explored test: the search, its failure text, its summary and JSON).
"""
