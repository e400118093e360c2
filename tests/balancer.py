"""HAProxy (Debian's `haproxy` package) in front of scan-planner replicas on loopback: HTTP mode, round robin
per request, each replica health-checked on /health. Used by the replica tests and bench/replica_bench.py;
docker-compose.yml's `balancer` service runs the same configuration (deploy/haproxy.cfg). A replica's name
that does not resolve yet (a container still starting) leaves it down until it does, not HAProxy. `Replica`
is a service on a fixed port that a test stops, kills and starts again behind it."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from tests.processes import free_port, stop, wait_for_port

HAPROXY = Path("/usr/sbin/haproxy")
CONFIG = """\
global
    maxconn 4096

defaults
    mode http
    option http-keep-alive
    timeout connect 5s
    # a request's headers within 10 s of its first byte (a slow client holds no connection to a replica)
    timeout http-request 10s
    timeout client 600s
    timeout server 600s
    timeout http-keep-alive 60s
    default-server init-addr last,libc,none
    # a request whose replica refused the connection, or closed it without answering (stopped or killed),
    # goes to another replica: every request of the service is safe to send again (plans only read)
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response

frontend planners
    bind {bind}
    default_backend replicas

backend replicas
    balance roundrobin
    option httpchk GET /health
{servers}
"""


def haproxy_config(bind: str, backends: Sequence[str]) -> str:
    """The configuration: `bind` (host:port) in front of `backends` (base URLs or host:port)."""
    servers = []
    for i, backend in enumerate(backends):
        address = urlsplit(backend).netloc if "://" in backend else backend
        servers.append(f"    server replica{i} {address} check inter 1s fall 2 rise 1")
    return CONFIG.format(bind=bind, servers="\n".join(servers))


def haproxy_path() -> Path | None:
    found = shutil.which("haproxy")
    return Path(found) if found else (HAPROXY if HAPROXY.exists() else None)


@contextlib.contextmanager
def balanced(backends: Sequence[str], timeout: float = 30.0) -> Iterator[str]:
    """HAProxy round-robin over `backends` (running services' base URLs) while the block runs; yields its
    base URL once every backend answers its health check through it."""
    executable = haproxy_path()
    if executable is None:
        raise RuntimeError("haproxy is not installed: apt-get install haproxy (scripts/setup_tests.sh installs it)")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="haproxy-") as directory:
        config = Path(directory) / "haproxy.cfg"
        config.write_text(haproxy_config(f"127.0.0.1:{port}", backends))
        log = Path(directory) / "haproxy.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([str(executable), "-db", "-f", str(config)], stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for_port(port, proc, timeout)
            yield f"http://127.0.0.1:{port}"
        except (RuntimeError, TimeoutError) as exc:
            raise RuntimeError(f"haproxy: {exc}:\n{log.read_text()[-2000:]}") from None
        finally:
            stop(proc)


class Replica:
    """`scan-planner serve` on a fixed loopback port, started and stopped (or killed) by the test."""

    def __init__(self, warehouse: str, drain_seconds: float = 3, args: Sequence[str] = ()) -> None:
        self.port, self.warehouse, self.drain_seconds = free_port(), warehouse, drain_seconds
        self.args = list(args)  # more arguments of `serve` (--config, --workers)
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = tempfile.NamedTemporaryFile(prefix="replica-", suffix=".log", delete=False)  # noqa: SIM115

    def start(self) -> None:
        cli = Path(sys.executable).with_name("scan-planner")
        env = {**os.environ, "SCAN_PLANNER_SHUTDOWN_DRAIN_SECONDS": str(self.drain_seconds)}
        args = [str(cli), "serve", "--host", "127.0.0.1", "--port", str(self.port), "--warehouse", self.warehouse]
        args += self.args
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        wait_for_port(self.port, self.proc, 60)

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 60) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout)
        self.proc = None
        return code

    def close(self) -> None:
        """Stopped as a service is stopped (SIGTERM: uvicorn stops its worker processes too, which a SIGKILL of
        the parent would leave running), killed only if it does not stop."""
        if self.proc is not None:
            stop(self.proc, timeout=30)
            self.proc.wait()
        self.log.close()
