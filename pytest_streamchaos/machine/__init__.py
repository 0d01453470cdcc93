"""This machine: how a short host command runs (:mod:`.commands`), its free ports (:mod:`.ports`), the
preflight of what the stack runs with (:mod:`.environment`: Java, pyspark), and what is fetched and built onto
it once, into the plugin's cache (:mod:`.artifacts`: the jars from Maven Central, with their locks in
``jar_locks/``; :mod:`.cds`: the JVMs' class-data sharing archives). ``python -m pytest_streamchaos.prepare``
does the fetching and building ahead of a session.

The bottom of the harness: it imports nothing of the package but ``assets``, ``jsonfile`` and ``errors``; the
stack, ``spark/`` and ``prepare`` build on it.
"""
