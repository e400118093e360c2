"""Shared fixtures: real servers on loopback (moto's S3), small table factories."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from tests.conformance.reference import Conformance, load_or_build
from tests.markers import forbid_jvm, mark
from tests.processes import free_port, stop, wait_for_port

__all__ = ["free_port", "running_service", "wait_for_port"]  # (imported from here by the tests)


@contextlib.contextmanager
def running_service(*args: str, env: dict[str, str] | None = None, log_path: Path | None = None) -> Iterator[str]:
    """`scan-planner serve ARGS` as a real uvicorn process on a free loopback port; yields its base URL. Its
    output (the JSON log lines) goes to `log_path`, or to a temporary file. Unless `env` or its settings file
    names one, the service has an index directory of its own (a fresh service starts cold, as the tests of cold
    plans expect; those of the disk tier share one: tests/service/test_index_tier_processes.py)."""
    port = free_port()
    own_index = None
    config = args[args.index("--config") + 1] if "--config" in args[:-1] else None
    configured = config is not None and "index_directory" in Path(config).read_text()  # (the file's wins)
    if "SCAN_PLANNER_INDEX_DIRECTORY" not in {**os.environ, **(env or {})} and not configured:
        own_index = tempfile.mkdtemp(prefix="scan-planner-index-")
        env = {**(env or {}), "SCAN_PLANNER_INDEX_DIRECTORY": own_index}
    cli = Path(sys.executable).with_name("scan-planner")
    log: IO[bytes]
    if log_path is not None:
        log = open(log_path, "wb")  # noqa: SIM115
    else:
        log = tempfile.NamedTemporaryFile(prefix="scan-planner-", suffix=".log", delete=False)  # noqa: SIM115
    # stopped at once (the drain a balancer needs, service/lifecycle.py, is tested where it is asked for)
    environment = {"SCAN_PLANNER_SHUTDOWN_DRAIN_SECONDS": "0", **os.environ, **(env or {})}
    proc = subprocess.Popen(
        [str(cli), "serve", "--host", "127.0.0.1", "--port", str(port), *args],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=environment,
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}"
    except (RuntimeError, TimeoutError) as exc:
        raise RuntimeError(f"{exc}; service log:\n{Path(log.name).read_text()[-3000:]}") from None
    finally:
        stop(proc)
        log.close()
        if own_index is not None:
            shutil.rmtree(own_index, ignore_errors=True)


@pytest.fixture(scope="session")
def conformance_service(conformance: Conformance) -> Iterator[str]:
    """The service over the conformance warehouse (tables db.<name>); by default it reads only there."""
    warehouse = conformance.dir / "warehouse"
    config = conformance.dir.parent / f"service-{conformance.dir.name}.toml"
    config.write_text("plan_task_page_size = 4\n")
    with running_service("--warehouse", str(warehouse), "--config", str(config)) as url:
        yield url


@contextlib.contextmanager
def emulator(argv: list[str], port: int, what: str) -> Iterator[None]:
    """A storage emulator process listening on `port` of loopback while the block runs."""
    if not Path(argv[0]).exists():
        raise RuntimeError(f"{what} is not installed at {argv[0]}: run scripts/setup_tests.sh")
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc, timeout=60)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def gcs_endpoint() -> Iterator[str]:
    """gcp-storage-emulator (Google Cloud Storage's JSON API) on loopback: its http://host:port."""
    port = free_port()
    cli = str(Path(sys.executable).with_name("gcp-storage-emulator"))
    argv = [cli, "start", "--host", "127.0.0.1", "--port", str(port), "--in-memory"]
    with emulator(argv, port, "gcp-storage-emulator"):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="session")
def azurite_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Azurite's blob service (npm, installed by scripts/setup_tests.sh) on loopback: its host:port."""
    port = free_port()
    cli = str(Path(__file__).resolve().parent.parent / ".venv" / "azurite" / "node_modules" / ".bin" / "azurite-blob")
    data = tmp_path_factory.mktemp("azurite")
    argv = [
        cli,
        "--blobHost",
        "127.0.0.1",
        "--blobPort",
        str(port),
        "--location",
        str(data),
        "--skipApiVersionCheck",
        "--silent",
    ]
    with emulator(argv, port, "Azurite"):
        yield f"127.0.0.1:{port}"


@contextlib.contextmanager
def moto_server(env: dict[str, str] | None = None) -> Iterator[str]:
    """A moto server (S3, STS, ...) on loopback while the block runs, its environment plus `env`; its URL."""
    port = free_port()
    moto = Path(sys.executable).with_name("moto_server")
    proc = subprocess.Popen(
        [str(moto), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """A moto S3 server on loopback, for the whole session."""
    with moto_server() as url:
        yield url


@pytest.fixture(scope="session")
def conformance(request: pytest.FixtureRequest) -> Conformance:
    """Iceberg Java's recorded plans and the tables they were planned on (tests/conformance/reference.py)."""
    return load_or_build(request.config)


# --- Markers (tests/markers.py): java, spark, services -------------------------------------------------


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark(items)


def pytest_configure(config: pytest.Config) -> None:
    """The unit tier (SCAN_PLANNER_TEST_TIER=unit, scripts/test.sh --unit) holds to its name: a test that
    reaches for a JVM without its marker fails instead of quietly taking a minute (tests/markers.py
    forbid_jvm; workers inherit the environment)."""
    if os.environ.get("SCAN_PLANNER_TEST_TIER") == "unit" and not hasattr(config, "workerinput"):
        forbid_jvm(os.environ, Path(tempfile.mkdtemp(prefix="scan-planner-no-jvm-")))


@pytest.fixture(scope="session")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SCAN_PLANNER_HOME of its own: the service writes the demo warehouse there on first start."""
    return tmp_path_factory.mktemp("planner-home")


@pytest.fixture(scope="session")
def demo_service(demo_home: Path) -> Iterator[str]:
    """`scan-planner serve` with no configuration: the demo warehouse (demo.events), written afresh."""
    with running_service(env={"SCAN_PLANNER_HOME": str(demo_home)}) as url:
        yield url


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB tmpfs mounted for the test (needs root: skipped otherwise), unmounted after it."""
    point = tmp_path / "disk"
    point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(point)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.decode()[-200:]}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)
