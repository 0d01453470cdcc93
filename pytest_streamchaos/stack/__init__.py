"""What runs: the stack interface (:mod:`.base`) and what implements it -- the clusters every backend
shares (:mod:`.standalone`, :mod:`.kraft`, :mod:`.hdfs`, the driver's launch :mod:`.driver`) on a
:mod:`.placement` per backend (:mod:`.local`, :mod:`.docker`), over the session's host resources
(:mod:`.host`). docs/architecture.md, "Adding a backend"."""
