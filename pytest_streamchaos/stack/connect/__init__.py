"""Spark Connect as the stack runs it: a Connect server on the session's standalone cluster (the query's
driver), the user's script its client (docs/connect.md)."""

from pytest_streamchaos.events import Kind

#: the timeline kinds of a Connect server (its launch, Spark's Connect listener events): its managers' ``events``
KINDS = tuple(k for k in Kind if k.value.startswith("connect_"))
