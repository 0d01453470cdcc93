"""The flags of every JVM the stack starts (Spark's daemons, Kafka and HDFS nodes, the driver)."""

from __future__ import annotations

import os
from pathlib import Path

#: Daemon JVM flags, chosen for start-up CPU (measured: a master or worker burns ~6.5 CPU-s to boot
#: with defaults, ~3 with these; on 2 cores that is the cold-start time). C1 only and the serial GC:
#: the daemons do little work, so peak JIT performance does not matter. Bytecode verification off:
#: the classes are Spark's own jars from the pyspark wheel (saves ~15 %). IPv4 only: plain
#: 127.0.0.1 sockets rather than IPv4-mapped IPv6 ones.
DAEMON_JAVA_OPTS = ("-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto -Djava.net.preferIPv4Stack=true "
                    "-XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote")
DAEMON_MEMORY = "256m"


def jvm_tmp_opts(tmp: os.PathLike | str) -> str:
    """JVM flags that keep its scratch files (unpacked native libraries) in ``tmp`` -- a directory
    the plugin removes -- and write no hsperfdata file that a SIGKILLed JVM would leave behind."""
    Path(tmp).mkdir(parents=True, exist_ok=True)
    return f"-Djava.io.tmpdir={tmp} -XX:-UsePerfData"


# Hadoop 3.5's daemons (HDFS, YARN) log through slf4j to reload4j (log4j 1.x API): one line per event, to
# the daemon's log file; each adds the loggers it quiets
HADOOP_LOG4J = """\
log4j.rootLogger=INFO, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.target=System.out
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=%d{HH:mm:ss.SSS} %-5p [%t] %c{1}: %m%n
"""
