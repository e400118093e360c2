"""The Iceberg Java 1.10.2 environment for the conformance suite: Java 17, a pyspark 3.5 virtualenv, the jars.

    python3 scripts/java_env.py      # set everything up (minutes, once) and print {"python", "jars", "java_home"}

Stdlib only, so that any python3 >= 3.11 can run it before the project's own environment exists.

Everything lands under $SCAN_PLANNER_CACHE (default ~/.cache/scan-planner), keyed by content:
* venvs/iceberg-java-<hash>/  pyspark 3.5 (Scala 2.12) and snowpark-connect-deps-iceberg, whose
  iceberg-spark-runtime jar is Iceberg's own build repackaged;
* jars/iceberg-shaded-jackson-<hash>.jar  that repackaging dropped Iceberg's relocated Jackson
  (org.apache.iceberg.shaded.com.fasterxml.jackson), so the first metadata write fails with
  NoClassDefFoundError. We rebuild it from the Jackson 2.15 jars that pyspark ships, relocating every class
  by rewriting the UTF-8 entries of its constant pool, as a shading plugin would.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

# fastavro: tests/hostile/java_verdicts.py rewrites the Avro files Iceberg Java wrote
REQUIREMENTS = ("pyspark==3.5.*", "snowpark-connect-deps-iceberg==1.0.3", "fastavro==1.13.*")
RUNTIME_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
# The Jackson artifacts Iceberg's runtime jar bundles (relocated) and references.
JACKSON_ARTIFACTS = ("jackson-annotations", "jackson-core", "jackson-databind", "jackson-datatype-jsr310")
RELOCATIONS = (
    (b"com/fasterxml/jackson/", b"org/apache/iceberg/shaded/com/fasterxml/jackson/"),
    (b"com.fasterxml.jackson.", b"org.apache.iceberg.shaded.com.fasterxml.jackson."),
)
SHADER_VERSION = 1  # bump when the relocation logic changes, to rebuild cached jars


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


# --- Java -------------------------------------------------------------------------------------------------


def ensure_java() -> str:
    """Return JAVA_HOME, installing OpenJDK 17 with apt-get if `java` is not on PATH."""
    java = shutil.which("java")
    if java is None:
        if shutil.which("apt-get") is None or os.geteuid() != 0:
            raise JavaEnvError("`java` is not on PATH: install a Java 17 runtime (e.g. openjdk-17-jre-headless)")
        log("java not found: apt-get install openjdk-17-jre-headless")
        hint = "Install Java 17 by hand (apt-get install openjdk-17-jre-headless) and run again."
        noninteractive = {"DEBIAN_FRONTEND": "noninteractive"}
        _run(["apt-get", "update", "-qq"], "apt-get update", hint, noninteractive)
        _run(["apt-get", "install", "-y", "-qq", "openjdk-17-jre-headless"], "apt-get install", hint, noninteractive)
        java = shutil.which("java")
        if java is None:
            raise JavaEnvError("openjdk-17-jre-headless is installed but `java` is still not on PATH")
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    major = re.search(r'version "(?:1\.)?(\d+)', version)
    if major is None or int(major[1]) < 11:
        raise JavaEnvError(f"{java} is not Java 11 or newer ({version.strip()[:80]}): install openjdk-17-jre-headless")
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return home
    return str(Path(java).resolve().parent.parent)


# --- The virtualenv ---------------------------------------------------------------------------------------


def _venv_python(venv_dir: Path) -> Path:
    return venv_dir / "bin" / "python"


_PROBE = """
import json, pathlib, pyspark, snowpark_connect_deps_iceberg as deps
print(json.dumps({"pyspark_jars": str(pathlib.Path(pyspark.__file__).parent / "jars"),
                  "iceberg_jars": str(deps.get_jars_dir()), "pyspark_version": pyspark.__version__}))
"""


def ensure_venv(root: Path) -> tuple[Path, dict[str, str]]:
    """Create (once) the pyspark venv; return its python and where the packages keep their jars."""
    key = hashlib.sha256(json.dumps([REQUIREMENTS, sys.version_info[:2]]).encode()).hexdigest()[:12]
    venv_dir = root / "venvs" / f"iceberg-java-{key}"
    done = venv_dir / ".installed.json"
    if done.exists():
        return _venv_python(venv_dir), json.loads(done.read_text())
    if venv_dir.exists():
        log(f"removing the incomplete venv {venv_dir}")
        shutil.rmtree(venv_dir)
    log(f"creating {venv_dir} with {' '.join(REQUIREMENTS)} (about a minute: pyspark is 300 MB)")
    venv.EnvBuilder(with_pip=True).create(venv_dir)
    python = _venv_python(venv_dir)
    hint = "Check that PyPI is reachable (pip config, proxy) and run again; the partial venv is redone."
    _run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *REQUIREMENTS],
        "pip install",
        hint,
    )
    info = json.loads(_run([str(python), "-c", _PROBE], "probing the venv", hint))
    done.write_text(json.dumps(info, indent=1))
    log(f"venv ready: pyspark {info['pyspark_version']}")
    return python, info


# --- Relocating Jackson -----------------------------------------------------------------------------------

# Sizes of the constant-pool entries after their tag byte, for every tag but Utf8 (1).
_CP_SIZES = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2, 17: 4, 18: 4, 19: 2, 20: 2}


def relocate_bytes(data: bytes) -> bytes:
    for old, new in RELOCATIONS:
        data = data.replace(old, new)
    return data


def relocate_class(data: bytes) -> bytes:
    """Rewrite every CONSTANT_Utf8 entry of a class file: class names, descriptors, signatures, strings.

    Only the constant pool changes size, and nothing in a class file points into it by byte offset, so the
    rest of the file is copied as is.
    """
    if data[:4] != b"\xca\xfe\xba\xbe":
        raise ValueError("not a class file")
    (count,) = struct.unpack_from(">H", data, 8)
    out = io.BytesIO()
    out.write(data[:10])
    pos, index = 10, 1
    while index < count:
        tag = data[pos]
        if tag == 1:
            (length,) = struct.unpack_from(">H", data, pos + 1)
            text = relocate_bytes(data[pos + 3 : pos + 3 + length])
            if len(text) > 0xFFFF:
                raise ValueError("relocated constant exceeds 65535 bytes")
            out.write(struct.pack(">BH", 1, len(text)) + text)
            pos += 3 + length
        elif tag in _CP_SIZES:
            out.write(data[pos : pos + 1 + _CP_SIZES[tag]])
            pos += 1 + _CP_SIZES[tag]
        else:
            raise ValueError(f"unknown constant-pool tag {tag} at entry {index}")
        index += 2 if tag in (5, 6) else 1  # long and double take two slots
    out.write(data[pos:])
    return out.getvalue()


def _jackson_jars(pyspark_jars: Path) -> list[Path]:
    jars = []
    for artifact in JACKSON_ARTIFACTS:
        found = sorted(pyspark_jars.glob(f"{artifact}-2.*.jar"))
        if not found:
            raise JavaEnvError(f"{artifact}-2.*.jar is not in {pyspark_jars}: reinstall the venv (delete it)")
        jars.append(found[-1])
    return jars


def _wanted_entry(name: str) -> bool:
    """Relocate the classes and their service files; skip module descriptors and multi-release variants."""
    if name.endswith("/") or name.startswith("META-INF/versions/") or name.endswith("module-info.class"):
        return False
    return name.endswith(".class") or name.startswith("META-INF/services/com.fasterxml.jackson.")


def build_shaded_jackson(sources: list[Path], target: Path) -> None:
    """Write one jar with the sources' classes relocated under org/apache/iceberg/shaded/ (atomically)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        seen: set[str] = set()
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
            out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: scan-planner java_env.py\n")
            for source in sources:
                with zipfile.ZipFile(source) as jar:
                    for name in jar.namelist():
                        if not _wanted_entry(name):
                            continue
                        data = jar.read(name)
                        data = relocate_class(data) if name.endswith(".class") else relocate_bytes(data)
                        new_name = relocate_bytes(name.encode()).decode()
                        if new_name not in seen:
                            seen.add(new_name)
                            out.writestr(new_name, data)
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


_SHADED_REF = re.compile(rb"org/apache/iceberg/shaded/com/fasterxml/jackson/[A-Za-z0-9_/$]*[A-Za-z0-9_$]")


def missing_shaded_classes(runtime_jar: Path, shaded_jar: Path) -> list[str]:
    """Relocated Jackson names the runtime jar mentions that the shaded jar has neither as class nor package."""
    with zipfile.ZipFile(shaded_jar) as jar:
        provided = {n.removesuffix(".class") for n in jar.namelist()}
    packages = {name.rsplit("/", 1)[0] for name in provided}
    wanted: set[str] = set()
    with zipfile.ZipFile(runtime_jar) as jar:
        for name in jar.namelist():
            if name.endswith(".class") and not name.startswith("META-INF/"):
                wanted.update(m.decode() for m in _SHADED_REF.findall(jar.read(name)))
    return sorted(w for w in wanted if w not in provided and w not in packages)


def ensure_shaded_jackson(root: Path, pyspark_jars: Path, runtime_jar: Path) -> Path:
    sources = _jackson_jars(pyspark_jars)
    digest = hashlib.sha256(str(SHADER_VERSION).encode())
    for source in sources:
        digest.update(source.name.encode() + source.read_bytes())
    target = root / "jars" / f"iceberg-shaded-jackson-{digest.hexdigest()[:12]}.jar"
    if target.exists():
        return target
    log(f"relocating {', '.join(s.name for s in sources)} into {target.name}")
    build_shaded_jackson(sources, target)
    missing = missing_shaded_classes(runtime_jar, target)
    if missing:
        target.unlink()
        raise JavaEnvError(
            f"{RUNTIME_JAR} needs relocated Jackson classes that pyspark's Jackson jars lack: {missing[:10]}"
            f" ({len(missing)} in all). Add the artifact that has them to JACKSON_ARTIFACTS in {__file__}."
        )
    log(f"shaded Jackson ready: {target}")
    return target


# --- Entry point ------------------------------------------------------------------------------------------


def ensure_java_env() -> dict[str, object]:
    """Set up (once) and describe the environment that runs tests/conformance/generate.py."""
    root = cache_root()
    with file_lock(root / ".java-env.lock"):  # one setup at a time per cache
        java_home = ensure_java()
        python, info = ensure_venv(root)
        runtime_jar = Path(info["iceberg_jars"]) / RUNTIME_JAR
        if not runtime_jar.exists():
            raise JavaEnvError(
                f"{RUNTIME_JAR} is not in {runtime_jar.parent}: is snowpark-connect-deps-iceberg "
                f"still 1.0.3? Delete {python.parent.parent} and run again."
            )
        shaded = ensure_shaded_jackson(root, Path(info["pyspark_jars"]), runtime_jar)
    return {"python": str(python), "jars": [str(runtime_jar), str(shaded)], "java_home": java_home}


def main() -> int:
    try:
        env = ensure_java_env()
    except JavaEnvError as err:
        print(f"[java-env] error: {err}", file=sys.stderr)
        return 1
    print(json.dumps(env, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
