"""Our end of java_side.py: start it in the Java environment, send it commands, build histories through it.

JavaProcess is one long-lived java_side.py (one SparkSession); build(...) generates a seeded history op by op
(histories.HistoryGenerator), applying each with Spark as it goes, and replay(...) applies a given history
again (what shrinking does with a history missing some ops).
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from tests.conformance import reference
from tests.differential.histories import HistoryGenerator, history_length

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "java_side.py"
PREFIX = "@@differential "
_TAIL = 60


def _environment(java_home: str) -> dict[str, str]:
    """Ours, minus what would point pyspark at another Spark (as tests/conformance/reference.py runs it)."""
    drop = {"SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, "JAVA_HOME": java_home}


class JavaSideError(RuntimeError):
    """java_side.py died or failed a command; the message carries its output's tail."""


def log(message: str) -> None:
    print(f"[differential] {message}", file=sys.stderr, flush=True)


@dataclass
class Built:
    """A history as applied: its ops (each with "skipped": Spark's refusal, or None) and the table it made."""

    table: str
    ops: list[dict[str, Any]]
    metadata_location: str | None  # None: the create itself was refused

    @property
    def applied(self) -> list[dict[str, Any]]:
        """The ops Spark applied, without their outcome: the history to keep and to shrink."""
        return applied_ops(self.ops)


def applied_ops(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Of ops with their outcome ("skipped"), those Spark applied, without it."""
    return [{k: v for k, v in op.items() if k != "skipped"} for op in ops if op["skipped"] is None]


class JavaProcess:
    """java_side.py in the pyspark venv; commands go one at a time (a lock keeps threads from interleaving)."""

    def __init__(self, warehouse: Path) -> None:
        env = reference.load_java_env().ensure_java_env()
        self.warehouse = warehouse
        cmd = [env["python"], str(SCRIPT), "--warehouse", str(warehouse), "--jars", ",".join(env["jars"])]
        started = time.monotonic()
        self._tail: collections.deque[str] = collections.deque(maxlen=_TAIL)
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_environment(env["java_home"]),
        )
        assert self._proc.stderr is not None
        threading.Thread(target=self._drain, args=(self._proc.stderr,), daemon=True).start()
        self._lock = threading.Lock()
        self._tables = 0
        hello = self._receive()
        log(f"Spark {hello['ready']}, Iceberg {hello['iceberg']} up in {time.monotonic() - started:.1f}s")

    def _drain(self, stream: IO[str]) -> None:
        for line in stream:
            self._tail.append(line)

    def _receive(self) -> dict[str, Any]:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if line.startswith(PREFIX):
                message: dict[str, Any] = json.loads(line[len(PREFIX) :])
                if "failed" in message:
                    raise JavaSideError(message["failed"])
                return message
            self._tail.append(line)
        raise JavaSideError(f"java_side.py exited ({self._proc.wait()}):\n" + "".join(self._tail))

    def send(self, **message: Any) -> dict[str, Any]:
        assert self._proc.stdin is not None
        with self._lock:
            self._proc.stdin.write(json.dumps(message) + "\n")
            self._proc.stdin.flush()
            return self._receive()

    def new_table(self) -> str:
        self._tables += 1
        return f"h{os.getpid()}_{self._tables}"

    def close(self) -> None:
        if self._proc.poll() is None:
            with contextlib.suppress(JavaSideError, BrokenPipeError):
                self.send(cmd="quit")
            try:
                self._proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def __enter__(self) -> JavaProcess:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    # --- histories --------------------------------------------------------------------------------------

    def build(self, seed: int, size: str = "short") -> Built:
        """A new seeded history, generated op by op against what Spark accepts."""
        generator = HistoryGenerator(seed)
        table = self.new_table()
        ops: list[dict[str, Any]] = []
        for _ in range(5):  # a refused create (a partition Spark cannot write): another one
            create = generator.first_op()
            outcome = self.send(cmd="apply", table=table, op=create)
            ops.append({**create, "skipped": None if outcome["ok"] else outcome["error"]})
            generator.applied(create, outcome["ok"])
            if outcome["ok"]:
                break
        else:
            return Built(table, ops, None)
        for _ in range(history_length(generator.rng, size)):
            op = generator.next_op()
            outcome = self.send(cmd="apply", table=table, op=op)
            generator.applied(op, outcome["ok"])
            ops.append({**op, "skipped": None if outcome["ok"] else outcome["error"]})
        return Built(table, ops, self.send(cmd="table", table=table)["metadata_location"])

    def replay(self, history: list[dict[str, Any]]) -> Built:
        """Apply `history` to a new table; ops Spark refuses now are skipped."""
        table = self.new_table()
        ops = []
        for op in history:
            outcome = self.send(cmd="apply", table=table, op=op)
            ops.append({**op, "skipped": None if outcome["ok"] else outcome["error"]})
            if op["op"] == "create" and not outcome["ok"]:
                return Built(table, ops, None)
        return Built(table, ops, self.send(cmd="table", table=table)["metadata_location"])

    def plan(self, table: str, request: dict[str, Any]) -> dict[str, Any]:
        """{"request": resolved, "answer": Java's} or {"invalid": why}."""
        return self.send(cmd="plan", table=table, request=request)

    def read(self, table: str, request: dict[str, Any], grouping: bool, rows: dict[str, Any] | None) -> dict[str, Any]:
        """Spark + Iceberg's reads of a resolved request (spark_reads.py): {"grouping": ..., "rows": ...}."""
        return self.send(cmd="read", table=table, request=request, grouping=grouping, rows=rows)

    def drop(self, table: str) -> None:
        self.send(cmd="drop", table=table)
