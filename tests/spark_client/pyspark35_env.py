"""A small cached virtualenv with pyspark 3.5, for running spark_client on the older Spark.

It borrows pyspark 3.5 from the Iceberg Java environment (scripts/java_env.py, which the conformance suite
builds anyway) through a .pth file, and installs only what spark_client and mapInArrow need on top:
pandas, numpy, pyarrow, httpx, pyroaring and fastavro (seconds, where a second pyspark would be 300 MB). Like
java_env it lives under $SCAN_PLANNER_CACHE/venvs, keyed by its requirements and the borrowed
site-packages, and is built once under a file lock.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

from tests.conformance.reference import load_java_env

# the versions of pyspark 3.5's time: it predates numpy 2 (which pyarrow >= 18 needs) and pandas 3;
# pyroaring (deletion vectors) has BitMap64 from 1.0 and needs no numpy, so any numpy suits it
REQUIREMENTS = (
    "numpy>=1.26,<2",
    "pandas>=2.0,<2.3",
    "pyarrow>=15,<18",
    "httpx>=0.27",
    "pyroaring>=1.0",
    "fastavro>=1.9",
)
_PROBE = (
    "import json, pyspark, pandas, pyarrow, httpx, pyroaring, fastavro; from pyroaring import BitMap64; "
    "print(json.dumps({'pyspark': pyspark.__version__, 'pyroaring': pyroaring.__version__}))"
)
_SITE = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
# pyspark 3.5's worker calls importlib.invalidate_caches() before every task, and before Python 3.12 that
# makes each zipimporter re-read its whole archive (pyspark.zip, py4j's zip and the spark-core jar are on
# the workers' sys.path): ~0.1 s of CPU per task, which took the conformance reads from ~75 s to ~120 s.
# Spark 4 invalidates only when the path changed; the archives never change here, so the venv skips it.
SITECUSTOMIZE = """\
import sys
import zipimport

if sys.version_info < (3, 12):  # 3.12 re-reads an archive lazily (CPython gh-103200)
    zipimport.zipimporter.invalidate_caches = lambda self: None
"""


class Pyspark35Env:
    """The venv's python and the JAVA_HOME to run it with."""

    def __init__(self, python: Path, java_home: str, pyspark_version: str) -> None:
        self.python = python
        self.java_home = java_home
        self.pyspark_version = pyspark_version


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def ensure_pyspark35_env() -> Pyspark35Env:
    """Build (once) and describe the pyspark 3.5 client venv."""
    java_env = load_java_env()
    env = java_env.ensure_java_env()
    java_python = str(env["python"])
    borrowed = _run([java_python, "-c", _SITE]).strip()
    identity = [REQUIREMENTS, SITECUSTOMIZE, borrowed, sys.version_info[:2]]
    key = hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:12]
    root = java_env.cache_root() / "venvs"
    venv_dir = root / f"pyspark35-client-{key}"
    python = venv_dir / "bin" / "python"
    done = venv_dir / ".installed.json"
    with java_env.file_lock(root / f".pyspark35-client-{key}.lock"):
        if not done.exists():
            if venv_dir.exists():
                shutil.rmtree(venv_dir)
            venv.EnvBuilder(with_pip=True).create(venv_dir)
            own_site = Path(_run([str(python), "-c", _SITE]).strip())
            # after the venv's own packages on sys.path, so its pandas and numpy win over anything borrowed
            (own_site / "zz-borrowed-pyspark35.pth").write_text(borrowed + "\n")
            (own_site / "sitecustomize.py").write_text(SITECUSTOMIZE)
            _run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *REQUIREMENTS])
            info = json.loads(_run([str(python), "-c", _PROBE]))
            if not info["pyspark"].startswith("3.5."):
                raise RuntimeError(f"{borrowed} has pyspark {info['pyspark']}, not 3.5")
            done.write_text(json.dumps(info))
    info = json.loads(done.read_text())
    return Pyspark35Env(python, str(env["java_home"]), info["pyspark"])
