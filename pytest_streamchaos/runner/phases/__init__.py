"""The phases of one run, in the order :class:`~pytest_streamchaos.runner.run.Run` calls them:

1. :mod:`.topics` -- the run's Kafka topics (:class:`~.topics.RunTopics`)
2. :mod:`.job` -- the job prepared, not started (:class:`~.job.PreparedJob`)
3. :mod:`.observers` -- collector, generator, progress, checkpoint and sink watchers, fault scheduler
   (:class:`~.observers.Observers`)
4. :mod:`.warmup` -- the job started, until steady state (:class:`~.warmup.WarmUpResult`)
5. :mod:`.load` -- the load for its duration with the faults (:class:`~.load.LoadResult`)
6. :mod:`.drain` -- the load stopped, until the outputs settle (:class:`~.drain.DrainResult`)
7. :mod:`.verdict` -- the trace judged (a :class:`~pytest_streamchaos.analysis.result.ChaosRun`)

Each phase is a class built from what it reads and with one method that runs it and returns what
it made; what they all add to (timeline, warnings, phase times) is the
:class:`~pytest_streamchaos.runner.context.RunContext`.
"""
