"""Spark Connect as the stack runs it: a Connect server on the session's standalone cluster (the query's
driver), the user's script its client (docs/connect.md).

This package's face holds only Spark Connect's timeline kinds (what its managers' entries name as their
``events``), held by the timeline as soon as it is imported: the server's process records them by its role
(``Kind.of_process("connect_server", ...)``) and Spark's event log by its listener events' names
(``events.listened_kind``), without naming this package."""

from pytest_streamchaos.events import StrEnum, add_kinds


class ConnectKind(StrEnum):
    """What a Spark Connect server does, on a run's timeline."""

    # its process (``stack/connect/job.py``'s server job, its role ``connect_server``)
    CONNECT_SERVER_LAUNCHED = "connect_server_launched"
    CONNECT_SERVER_KILLED = "connect_server_killed"
    CONNECT_SERVER_STOPPED = "connect_server_stopped"
    #: it listens again after a restart
    CONNECT_SERVER_LISTENING = "connect_server_listening"
    # Spark's Connect listener events in its event log (SparkListenerConnectServiceStarted, ...)
    CONNECT_SERVICE_STARTED = "connect_service_started"
    CONNECT_SESSION_STARTED = "connect_session_started"
    CONNECT_SESSION_CLOSED = "connect_session_closed"


#: Spark Connect's timeline kinds: its managers' entries' ``events``
KINDS = tuple(ConnectKind)
add_kinds(KINDS)  # a server's job names its kinds by its role: held whenever this backend is in use
