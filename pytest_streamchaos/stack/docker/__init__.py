"""The ``docker`` backend: the same stack interface (``stack/base.py``) on containers.

Each node (Spark master, each worker, the Kafka brokers) is a container with its own network
namespace on one Docker network that the session creates; faults kill, pause and restart containers
through the Docker API and cut or delay links inside one container's namespace. See
docs/docker-backend.md for what runs where, and what was verified on which machine.

Modules: :mod:`.engine` (the daemon, labels, the session's network, clean-up), :mod:`.images` (the
images and what they mount), :mod:`.container` (one container as a restartable process),
:mod:`.spark` and :mod:`.kafka` (the two clusters).
"""

import os

# Ryuk, testcontainers' reaper, is an image pulled at first use; no registry may be reachable, and the
# plugin's own reaper (stack/reaper.py + engine.DockerSession) already removes what a session leaves.
# Read lazily by testcontainers, so setting it here, before any container starts, is enough.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
