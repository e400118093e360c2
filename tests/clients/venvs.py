"""Small cached virtualenvs for the real clients that cannot share the project's venv (another DuckDB, say):
built once per set of requirements under $SCAN_PLANNER_CACHE/venvs, under a file lock, like
scripts/java_env.py's pyspark venvs."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

from tests.conformance.reference import load_java_env

# The DuckDB releases the REST catalog is tested with, and their extensions as PyPI packages them
DUCKDB_REQUIREMENTS = {
    "1.4.4": ("duckdb==1.4.4", "duckdb-ext-iceberg==1.4.4.*", "duckdb-ext-httpfs==1.4.4.*", "duckdb-ext-avro==1.4.4.*"),
    "1.5.5": (
        "duckdb==1.5.5",
        "duckdb-extension-iceberg==1.5.5",
        "duckdb-extension-httpfs==1.5.5",
        "duckdb-extension-avro==1.5.5",
    ),
}


def client_venv(name: str, requirements: tuple[str, ...]) -> Path:
    """The python of a venv holding `requirements` (built the first time: seconds to a minute)."""
    java_env = load_java_env()
    key = hashlib.sha256(json.dumps([requirements, sys.version_info[:2]]).encode()).hexdigest()[:12]
    root = Path(java_env.cache_root()) / "venvs"
    venv_dir = root / f"{name}-{key}"
    python = venv_dir / "bin" / "python"
    done = venv_dir / ".installed"
    with java_env.file_lock(root / f".{name}-{key}.lock"):
        if not done.exists():
            if venv_dir.exists():
                shutil.rmtree(venv_dir)
            print(f"\n[clients] creating {venv_dir} with {' '.join(requirements)}", file=sys.stderr, flush=True)
            venv.EnvBuilder(with_pip=True).create(venv_dir)
            pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements]
            proc = subprocess.run(pip, capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"{' '.join(pip)} failed: check that PyPI is reachable\n{proc.stderr[-2000:]}")
            done.touch()
    return python


def duckdb_python(version: str) -> Path:
    return client_venv(f"duckdb-{version}", DUCKDB_REQUIREMENTS[version])
