"""Test job for the launcher: fails at once with a recognisable message."""

raise RuntimeError("streamchaos-test-boom: this job fails on purpose")
