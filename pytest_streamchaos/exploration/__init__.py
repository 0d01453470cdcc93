"""``@explore`` in pytest: the mark, the catalogue the search gets from the fault registry, and the
loop that runs a test's body once per schedule on the warm stack (docs/explore.md).

The search itself (:mod:`pytest_streamchaos.search`) is pure; this package is what ties it to the
plugin: :mod:`.mark` (the decorator and its checks), :mod:`.session` (what the session asks of every
explored test: the explore profile, ``--chaos-explore-seconds``, ``--chaos-explore``, ``--chaos-replay``,
and each test's resulting spec), :mod:`.catalogue` (the fault kinds as the search sees them, and a step as
a fault spec), :mod:`.body` (the body under one schedule, or the control run, as an
:class:`~pytest_streamchaos.search.schedule.Outcome`), :mod:`.memory` (what earlier sessions found and
tried, in pytest's cache), :mod:`.item` (one explored test: the search, its failure text, its summary
and JSON) and :mod:`.plugin` (the hooks, a plugin object of its own).
"""
