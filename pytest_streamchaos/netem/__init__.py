"""Breaking the host's network: the machinery the network faults act through, apart from what a fault means.

:mod:`.links` is the room's interface: what breaking one link takes (``partition``, ``slow``, ``drop``,
``throttle``; every fault heals), one small protocol per operation, served by each mechanism where it has
the operation -- iptables (:mod:`.iptables`), tc (:mod:`.tcshaper`), NFQUEUE (:mod:`.nfq_delayer`), all
three on this host's ports (:mod:`.rules`), and Toxiproxy's toxics on the job's proxies (:mod:`.toxics`).
:mod:`.probe` measures a faulted link; :mod:`.features` says what this host's network offers.

The fault families (``faults/families/``) decide what a fault is and where it acts, and ask this room for
it. The stack keeps what it runs for itself: the Toxiproxy server and its proxies (``stack/toxiproxy.py``,
started with the Kafka cluster), the one iptables wrapper (``stack/netfilter.py``, the job group's marking
rules use it too) and the job group (``stack/jobgroup.py``); this room imports them, never the reverse.
"""
