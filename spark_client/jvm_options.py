"""Arrow Java's checks on every value, and the two JVM system properties that switch them off.

Spark reads the batches plan_and_read hands it through Arrow Java's vectors, whose `get` checks each value
for null (`arrow.enable_null_check_for_get`) and each access for bounds (`arrow.enable_unsafe_memory_access`
false). Both are static, read when Arrow's classes load, so they go in the JVMs' options before the session
starts; Iceberg's own benchmarks set both. This module says once per application, in a log line at INFO (a
read prints nothing of it by default) with what the checks cost, what skipping them risks, the two flags and
where they go, when the session lacks them: plan_and_read from the session's conf; the data
source, whose code runs in Python workers that cannot see the conf, from the command line of the JVM that
started its worker.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

ARROW_PROPERTIES = {"arrow.enable_null_check_for_get": "false", "arrow.enable_unsafe_memory_access": "true"}
JAVA_OPTIONS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")
_ADVISED: set[str] = set()
_LOCK = threading.Lock()


def missing_arrow_properties(java_options: str) -> list[str]:
    """The -D settings of ARROW_PROPERTIES that a JVM options string lacks (or sets otherwise)."""
    given: dict[str, str] = {}
    for word in shlex.split(java_options or ""):
        if word.startswith("-D") and "=" in word:
            key, _, value = word[2:].partition("=")
            given[key] = value
    return [f"-D{k}={v}" for k, v in ARROW_PROPERTIES.items() if given.get(k, "").lower() != v]


def arrow_options_advice(conf: Callable[[str], str | None]) -> str | None:
    """What to add to the session's configuration (`conf`: a key's value, or None), or None if it has both:
    the two flags and the options that lack them, on one short line (not the options' whole value, which
    on Spark 4 holds Spark's own --add-opens list: Spark adds that list again by itself)."""
    lacking = [key for key in JAVA_OPTIONS if missing_arrow_properties(conf(key) or "")]
    if not lacking:
        return None
    flags = " ".join(f"-D{key}={value}" for key, value in ARROW_PROPERTIES.items())
    return (
        "Arrow Java checks each value Spark reads for null and bounds (up to a fifth of a read's JVM CPU). "
        "Unchecked, a malformed batch could crash the JVM rather than fail its task (this client's batches are "
        f"pyarrow's, checked as made). To skip the checks, add to {' and '.join(lacking)} before the session "
        f"starts: {flags}"
    )


def advise_arrow_options(application_id: str, conf: Callable[[str], str | None]) -> None:
    """Log the advice once per Spark application."""
    with _LOCK:
        if application_id in _ADVISED:
            return
        _ADVISED.add(application_id)
    advice = arrow_options_advice(conf)
    if advice is not None:
        log.info(advice)


def advise_from_jvm() -> None:
    """For code in a Spark Python worker (the data source's): log the advice once per JVM when the JVM that
    started this worker (an ancestor process; its command line carries the extraJavaOptions) lacks the
    options. Workers are processes of their own, so a marker file in the temp directory, named after the
    JVM's pid and holding what was said, makes it once."""
    found = _java_ancestor()
    if found is None:
        return
    pid, argv = found
    marker = Path(tempfile.gettempdir()) / f"scan-planner-arrow-advice-{pid}"
    if marker.exists():
        return
    missing = missing_arrow_properties(shlex.join(a for a in argv if a.startswith("-D")))
    advice = arrow_options_advice(lambda key: None) if missing else None
    with contextlib.suppress(OSError):
        marker.write_text(advice or "the JVM has the Arrow options")
    if advice is not None:
        log.info(advice)


def _java_ancestor(levels: int = 4) -> tuple[int, list[str]] | None:
    """(pid, argv) of the nearest `java` process among this process's ancestors (Linux /proc), if any."""
    pid = os.getppid()
    for _ in range(levels):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        if argv and os.path.basename(argv[0]) == "java":
            return pid, argv
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the parent's pid, after the command's (name)
        if pid <= 1:
            return None
    return None
