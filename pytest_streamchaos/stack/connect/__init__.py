"""Spark Connect as the stack runs it: a Connect server on the session's standalone cluster (the query's
driver), the user's script its client (docs/connect.md)."""
