"""A bare JVM with Iceberg on its classpath, driven through py4j: pyspark's gateway without a SparkContext.

Runs in the pyspark venv of scripts/java_env.py. No Spark job is needed to write or plan a table through
Iceberg's Java API, and skipping the SparkContext saves seconds per start. spark-submit puts
`spark.driver.extraClassPath` on the JVM's own classpath and `spark.driver.extraJavaOptions` on its command
line, so Iceberg's classes and -D flags reach the JVM as they would a Spark driver.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import IO, Any

from py4j.java_gateway import JavaGateway
from py4j.protocol import Py4JError, Py4JJavaError
from pyspark import SparkConf
from pyspark.java_gateway import launch_gateway

_TAIL_LINES = 30


@contextlib.contextmanager
def started_jvm(jars: Sequence[str], java_options: Sequence[str] = (), memory: str = "2g") -> Iterator[JavaGateway]:
    """A py4j gateway to a fresh JVM (heap `memory`); its output goes to a log, shown if the JVM fails."""
    conf = (
        SparkConf()
        .set("spark.driver.extraClassPath", ":".join(jars))
        .set("spark.driver.memory", memory)
        .set("spark.driver.extraJavaOptions", " ".join(java_options))
    )
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # silences the "hostname resolves to loopback" warning
    with tempfile.TemporaryFile("w+") as log:
        try:
            gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
        except Exception as err:
            raise RuntimeError(f"starting the JVM failed: {err}\n{_tail(log)}") from err
        try:
            yield gateway
        except Py4JJavaError as err:  # its message needs the JVM: render it before the JVM goes
            raise RuntimeError(f"Java failed: {err.java_exception.toString()}") from None
        except Py4JError as err:  # the JVM died (out of memory, killed): its output says why
            raise RuntimeError(f"lost the JVM: {err}\n{_tail(log)}") from None
        finally:
            gateway.shutdown()
            proc: Any = getattr(gateway, "proc", None)
            if proc is not None:
                proc.stdin.close()
                proc.wait(timeout=30)


def _tail(log: IO[str]) -> str:
    log.seek(0)
    return "".join(log.readlines()[-_TAIL_LINES:])


def jvm_pid(gateway: JavaGateway) -> int:
    return int(gateway.jvm.java.lang.ProcessHandle.current().pid())


def hadoop_file_io(gateway: JavaGateway) -> Any:
    """Iceberg's HadoopFileIO over a default Hadoop Configuration (local files)."""
    jvm = gateway.jvm
    return jvm.org.apache.iceberg.hadoop.HadoopFileIO(jvm.org.apache.hadoop.conf.Configuration())
