"""Iceberg Java for the tests and benches: Java 17, pyspark virtualenvs, and Iceberg's own jars from Maven Central.

    python3 scripts/java_env.py                          # the reference: Spark 3.5 + Iceberg 1.10.2
    python3 scripts/java_env.py --spark 4.1 --iceberg 1.12.0   # another Spark line and Iceberg release

Each prints {"python", "jars", "java_home", "pyspark_version"} once set up (minutes the first time, then
cached). Stdlib only, so that any python3 >= 3.11 runs it before the project's own environment exists.

Everything lands under $SCAN_PLANNER_CACHE (default ~/.cache/scan-planner), keyed by content:
* venvs/spark-<line>-<hash>/  pyspark of that line (3.5: Scala 2.12; 4.1: Scala 2.13) and fastavro;
* maven/  a Maven local repository: iceberg-spark-runtime-<spark>_<scala>-<version>.jar, fetched by
  `mvn dependency:get` (Maven is installed with apt-get when missing);
* rest-catalog-server/<version>-<hash>/  the classpath of Iceberg's own REST catalog server (its open-api
  test fixtures, iceberg-core, Jetty, Hadoop's client, sqlite-jdbc), resolved into maven/ by
  rest_catalog_server_classpath() for tests/catalog/iceberg_rest_server.py.
The reference of the conformance suite is Spark 3.5 with Iceberg 1.10.2 (REFERENCE); Iceberg 1.11 and later
also carry the REST scan-planning client (RESTTable, RESTTableScan) that tests/rest_java drives.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple


class SparkLine(NamedTuple):
    """A Spark release line: its pyspark requirement and the Scala version its Iceberg runtime is built for."""

    spark: str
    scala: str
    requirement: str


SPARK_LINES = {
    "3.5": SparkLine("3.5", "2.12", "pyspark==3.5.*"),
    "4.1": SparkLine("4.1", "2.13", "pyspark==4.1.*"),  # the newest Spark with an Iceberg runtime (1.11, 1.12)
}
REFERENCE_SPARK = "3.5"
REFERENCE_ICEBERG = "1.10.2"  # what the conformance suite's expectations are recorded with
REST_CLIENT_ICEBERG = ("1.11.0", "1.12.0")  # releases with the REST scan-planning client
# fastavro: tests/hostile/java_verdicts.py rewrites the Avro files Iceberg Java wrote
EXTRA_REQUIREMENTS = ("fastavro==1.13.*",)
MAVEN_CENTRAL = "https://repo.maven.apache.org/maven2"


class JavaEnvError(RuntimeError):
    """Setting up the Java environment failed; the message says what to do next."""


def log(message: str) -> None:
    print(f"[java-env] {message}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    return Path(os.environ.get("SCAN_PLANNER_CACHE") or Path.home() / ".cache" / "scan-planner").expanduser()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive flock on `path`, so that parallel sessions do not build the same thing twice.

    The one copy for the repository: bench/, tests/conformance and tests/spark_client load this script anyway.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(cmd: list[str], what: str, hint: str, env: dict[str, str] | None = None) -> str:
    """Run a command quietly; on failure raise with its output and what to do next."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
        raise JavaEnvError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}\n{hint}")
    return proc.stdout


def _apt_install(package: str, command: str) -> str:
    """Install a Debian package that provides `command`; return the command's path."""
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise JavaEnvError(f"`{command}` is not on PATH: install {package} and run again")
    log(f"{command} not found: apt-get install {package}")
    hint = f"Install {package} by hand (apt-get install {package}) and run again."
    noninteractive = {"DEBIAN_FRONTEND": "noninteractive"}
    _run(["apt-get", "update", "-qq"], "apt-get update", hint, noninteractive)
    _run(["apt-get", "install", "-y", "-qq", package], "apt-get install", hint, noninteractive)
    found = shutil.which(command)
    if found is None:
        raise JavaEnvError(f"{package} is installed but `{command}` is still not on PATH")
    return found


# --- Java -------------------------------------------------------------------------------------------------


def ensure_java() -> str:
    """Return JAVA_HOME, installing OpenJDK 17 with apt-get if `java` is not on PATH."""
    java = shutil.which("java") or _apt_install("openjdk-17-jre-headless", "java")
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    major = re.search(r'version "(?:1\.)?(\d+)', version)
    if major is None or int(major[1]) < 11:
        raise JavaEnvError(f"{java} is not Java 11 or newer ({version.strip()[:80]}): install openjdk-17-jre-headless")
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return home
    return str(Path(java).resolve().parent.parent)


# --- Jars from Maven Central ------------------------------------------------------------------------------


def maven_jar(group: str, artifact: str, version: str) -> Path:
    """The artifact's jar in the cache's Maven repository, fetched from Maven Central (no dependencies) once."""
    repo = cache_root() / "maven"
    jar = repo / Path(*group.split(".")) / artifact / version / f"{artifact}-{version}.jar"
    if jar.exists():
        return jar
    mvn = shutil.which("mvn") or _apt_install("maven", "mvn")
    coordinates = f"{group}:{artifact}:{version}"
    log(f"fetching {coordinates} from Maven Central into {repo}")
    _run(
        [
            mvn,
            "-q",
            "-B",
            "dependency:get",
            f"-Dartifact={coordinates}",
            "-Dtransitive=false",
            f"-DremoteRepositories={MAVEN_CENTRAL}",
            f"-Dmaven.repo.local={repo}",
        ],
        f"fetching {coordinates}",
        f"Check that Maven Central is reachable ({MAVEN_CENTRAL}) and that {coordinates} exists, then run again.",
    )
    if not jar.exists():
        raise JavaEnvError(f"mvn fetched {coordinates} but {jar} is not there: delete {repo} and run again")
    return jar


def iceberg_runtime_jar(spark: str, iceberg: str) -> Path:
    """iceberg-spark-runtime for a Spark line (SPARK_LINES) and an Iceberg release."""
    line = _spark_line(spark)
    return maven_jar("org.apache.iceberg", f"iceberg-spark-runtime-{line.spark}_{line.scala}", iceberg)


def _spark_line(spark: str) -> SparkLine:
    if spark not in SPARK_LINES:
        raise JavaEnvError(f"no Spark line {spark!r}: choose one of {', '.join(SPARK_LINES)}")
    return SPARK_LINES[spark]


# --- Iceberg's REST catalog server (tests/catalog/iceberg_rest_server.py) ---------------------------------


class RestServerLine(NamedTuple):
    """What RESTCatalogServer of an Iceberg release line needs at run time besides iceberg-core, as Iceberg's
    build (open-api's testFixturesImplementation) names it: the published pom of iceberg-open-api lists none."""

    jetty: tuple[str, ...]  # group:artifact:version
    hadoop: str  # RESTCatalogServer builds its catalog with a Hadoop Configuration, and HadoopFileIO is the io
    sqlite: str
    slf4j: str


REST_SERVER_LINES = {
    "1.10": RestServerLine(("org.eclipse.jetty:jetty-servlet:11.0.26",), "3.4.1", "3.50.3.0", "2.0.17"),
    "1.11": RestServerLine(
        (
            "org.eclipse.jetty.ee10:jetty-ee10-servlet:12.1.8",
            "org.eclipse.jetty.compression:jetty-compression-server:12.1.8",
            "org.eclipse.jetty.compression:jetty-compression-gzip:12.1.8",
        ),
        "3.4.3",
        "3.53.0.0",
        "2.0.17",
    ),
}
# iceberg-open-api:1.12.0:test-fixtures is not on Maven Central, nor are iceberg-api/-common/-bundled-guava 1.10.2
REST_SERVER_ICEBERG = "1.11.0"
REST_SERVER_MAIN = "org.apache.iceberg.rest.RESTCatalogServer"


def _rest_server_pom(iceberg: str, line: RestServerLine) -> str:
    coordinates = [
        f"org.apache.iceberg:iceberg-open-api:{iceberg}:test-fixtures",  # RESTCatalogServer, its adapter
        f"org.apache.iceberg:iceberg-core:{iceberg}",  # with iceberg-api, bundled guava, jackson, httpclient5
        f"org.apache.iceberg:iceberg-core:{iceberg}:tests",  # RESTCatalogAdapter, RESTCatalogServlet
        *line.jetty,
        f"org.apache.hadoop:hadoop-client-api:{line.hadoop}",  # Hadoop shaded: two jars, no conflicts
        f"org.apache.hadoop:hadoop-client-runtime:{line.hadoop}",
        f"org.xerial:sqlite-jdbc:{line.sqlite}",
        f"org.slf4j:slf4j-simple:{line.slf4j}",  # its log on stderr
    ]
    dependencies = []
    for coordinate in coordinates:
        group, artifact, version, *classifier = coordinate.split(":")
        extra = f"<classifier>{classifier[0]}</classifier>" if classifier else ""
        dependencies.append(
            f"    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version>{extra}</dependency>"
        )
    return "\n".join(
        [
            '<project xmlns="http://maven.apache.org/POM/4.0.0">',
            "  <modelVersion>4.0.0</modelVersion>",
            "  <groupId>scan-planner</groupId>",
            "  <artifactId>iceberg-rest-catalog-server</artifactId>",
            f"  <version>{iceberg}</version>",
            "  <packaging>pom</packaging>",
            "  <dependencies>",
            *dependencies,
            "  </dependencies>",
            "</project>",
            "",
        ]
    )


def rest_catalog_server_classpath(iceberg: str = REST_SERVER_ICEBERG) -> list[Path]:
    """The jars that run Iceberg's REST catalog server (REST_SERVER_MAIN, from iceberg-open-api's test
    fixtures) of an Iceberg release, resolved once with `mvn dependency:build-classpath` into the cache's
    Maven repository (about 80 MB the first time): a JDBC catalog on SQLite with HadoopFileIO behind Jetty."""
    line = REST_SERVER_LINES.get(".".join(iceberg.split(".")[:2]))
    if line is None:
        raise JavaEnvError(
            f"no REST catalog server dependencies known for Iceberg {iceberg}: choose a release of "
            f"{', '.join(f'{k}.x' for k in REST_SERVER_LINES)} (Maven Central has no iceberg-open-api 1.12 fixtures)"
        )
    pom = _rest_server_pom(iceberg, line)
    key = hashlib.sha256(pom.encode()).hexdigest()[:12]
    root = cache_root() / "rest-catalog-server" / f"{iceberg}-{key}"
    listing = root / "classpath.json"
    with file_lock(root.parent / f".{iceberg}-{key}.lock"):
        if listing.exists():
            jars = [Path(jar) for jar in json.loads(listing.read_text())]
            if all(jar.exists() for jar in jars):
                return jars
        root.mkdir(parents=True, exist_ok=True)
        (root / "pom.xml").write_text(pom)
        output = root / "classpath.txt"
        repo = cache_root() / "maven"
        mvn = shutil.which("mvn") or _apt_install("maven", "mvn")
        log(f"resolving Iceberg {iceberg}'s REST catalog server from Maven Central into {repo}")
        _run(
            [
                mvn,
                "-q",
                "-B",
                "-f",
                str(root / "pom.xml"),
                "dependency:build-classpath",
                f"-Dmdep.outputFile={output}",
                "-Dmdep.includeScope=runtime",
                f"-Dmaven.repo.local={repo}",
            ],
            f"resolving the REST catalog server of Iceberg {iceberg}",
            f"Check that Maven Central is reachable ({MAVEN_CENTRAL}) and has every artifact of {root / 'pom.xml'}.",
        )
        jars = [Path(jar) for jar in output.read_text().strip().split(os.pathsep) if jar]
        missing = [str(jar) for jar in jars if not jar.exists()]
        if not jars or missing:
            raise JavaEnvError(f"mvn resolved {root / 'pom.xml'} but jars are missing ({missing[:3]}): run again")
        listing.write_text(json.dumps([str(jar) for jar in jars], indent=1))
        return jars


# --- The virtualenvs --------------------------------------------------------------------------------------

_PROBE = "import json, pyspark; print(json.dumps({'pyspark_version': pyspark.__version__}))"


def ensure_venv(spark: str) -> tuple[Path, dict[str, str]]:
    """Create (once) the pyspark venv of a Spark line; return its python and what it holds."""
    requirements = (_spark_line(spark).requirement, *EXTRA_REQUIREMENTS)
    key = hashlib.sha256(json.dumps([requirements, sys.version_info[:2]]).encode()).hexdigest()[:12]
    root = cache_root() / "venvs"
    venv_dir = root / f"spark-{spark}-{key}"
    python = venv_dir / "bin" / "python"
    done = venv_dir / ".installed.json"
    with file_lock(root / f".spark-{spark}-{key}.lock"):
        if done.exists():
            return python, json.loads(done.read_text())
        if venv_dir.exists():
            log(f"removing the incomplete venv {venv_dir}")
            shutil.rmtree(venv_dir)
        log(f"creating {venv_dir} with {' '.join(requirements)} (about a minute: pyspark is 300-400 MB)")
        venv.EnvBuilder(with_pip=True).create(venv_dir)
        hint = "Check that PyPI is reachable (pip config, proxy) and run again; the partial venv is redone."
        _run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements],
            "pip install",
            hint,
        )
        info: dict[str, str] = json.loads(_run([str(python), "-c", _PROBE], "probing the venv", hint))
        done.write_text(json.dumps(info, indent=1))
        log(f"venv ready: pyspark {info['pyspark_version']}")
        return python, info


# --- Entry points -----------------------------------------------------------------------------------------


def ensure_spark_env(spark: str = REFERENCE_SPARK, iceberg: str = REFERENCE_ICEBERG) -> dict[str, object]:
    """Set up (once) and describe a pyspark venv of `spark`'s line with Iceberg `iceberg`'s Spark runtime."""
    java_home = ensure_java()
    python, info = ensure_venv(spark)
    jar = iceberg_runtime_jar(spark, iceberg)
    return {"python": str(python), "jars": [str(jar)], "java_home": java_home, **info}


def ensure_java_env() -> dict[str, object]:
    """The reference environment (Spark 3.5, Iceberg 1.10.2) that runs tests/conformance/generate.py."""
    return ensure_spark_env(REFERENCE_SPARK, REFERENCE_ICEBERG)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spark", default=REFERENCE_SPARK, choices=sorted(SPARK_LINES))
    parser.add_argument("--iceberg", default=REFERENCE_ICEBERG, help="an Iceberg release on Maven Central")
    args = parser.parse_args()
    try:
        env = ensure_spark_env(args.spark, args.iceberg)
    except JavaEnvError as err:
        print(f"[java-env] error: {err}", file=sys.stderr)
        return 1
    print(json.dumps(env, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
