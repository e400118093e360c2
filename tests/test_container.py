"""The Dockerfile and docker-compose.yml built and run for real, with podman (scripts/container.sh): the
image serves its demo warehouse, answers /health and a plan, and the spark target's PySpark reads the demo
table through the service's container; the compose stack comes up (S3, the seed, two planners behind
HAProxy), its spark service reads through the balancer, and it goes down. Long tier: minutes of building.
It needs root (podman and mmdebstrap are Debian packages; the script installs them)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conformance.reference import REPO

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="podman is installed and run as root here")


@pytest.mark.parametrize("part", ["image", "compose"])
def test_the_container_files_build_and_run(part: str) -> None:
    run = subprocess.run(["bash", "scripts/container.sh", part], cwd=REPO, capture_output=True, text=True, timeout=2400)
    said = run.stderr[-6000:]
    assert run.returncode == 0, said
    expected = {"image": "image: served, planned and read from PySpark", "compose": "compose: up, read through"}
    assert expected[part] in said
    environment = {k: v for k, v in os.environ.items() if k not in ("CONTAINERS_STORAGE_CONF", "CONTAINERS_CONF")}
    users_store = subprocess.run(
        ["podman", "images", "--filter", "label=scan-planner.stand-in", "--format", "{{.Repository}}:{{.Tag}}"],
        capture_output=True,
        text=True,
        env=environment,
        check=True,
    )
    assert users_store.stdout.strip() == "", "stand-ins named as upstream images left in the user's image store"
