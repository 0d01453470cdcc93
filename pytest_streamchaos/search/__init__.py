"""The search over fault schedules behind ``@explore`` (docs/explore.md): pure, data in and data out.

A schedule is a tuple of steps (fault kind, target, micro-batch phase, batch anchor). The engine
(:func:`~pytest_streamchaos.search.engine.explore`) walks the space a description of the fault kinds
spans (:mod:`.space`) in the order that finds crash-recovery bugs soonest, skips schedules that are
equivalent by construction (:mod:`.rules`), runs each through an abstract ``run_schedule(schedule) ->
Outcome`` callable, confirms a falsifying run, shrinks it (:mod:`.shrink`) and reports coverage
(:mod:`.coverage`); :mod:`.token` turns a schedule into a replay token. It imports nothing of the
package outside ``search/``: what runs a schedule on the stack is the caller's.
"""
