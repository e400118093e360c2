#!/usr/bin/env bash
# The container image and the compose stack, built and run with podman on a machine with no Docker engine and
# no image registry (docs/guides/deploying.md, "Docker"; tests/test_container.py runs this):
#   bash scripts/container.sh image      build the Dockerfile unchanged (both targets); serve, /health, a plan,
#                                        and a PySpark read in the spark image against the service's container
#   bash scripts/container.sh compose    docker-compose.yml's services up (podman-compose), the spark service's
#                                        read through the balancer, then down
#   bash scripts/container.sh            both
# What it needs it makes, once: podman and mmdebstrap (Debian packages, as root), a containers.conf of the two
# settings podman needs here, an image store of its own, a Debian bookworm base image made from Debian's
# packages and tagged as the images the files name (python:3.11-slim-bookworm; stand-ins for minio/minio, an S3
# store by moto, and haproxy:2.6, Debian's HAProxy) in that store only, never the user's, podman-compose in its
# own venv; all under ${SCAN_PLANNER_CACHE:-~/.cache/scan-planner}.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/system_packages.sh
what=${1:-all}
work=${SCAN_PLANNER_CACHE:-$HOME/.cache/scan-planner}/containers
mkdir -p "$work"
say() { echo "[container] $*" >&2; }

if ! command -v podman >/dev/null 2>&1 || ! command -v mmdebstrap >/dev/null 2>&1; then
  apt_install "the image is built and run with podman" podman buildah runc fuse-overlayfs slirp4netns uidmap mmdebstrap
fi
# root here cannot raise its hard limits (crun's setrlimit fails), and crun refuses the hybrid cgroup mount
cat >"$work/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
EOF
export CONTAINERS_CONF=$work/containers.conf
# stand-ins an earlier version of this script built into the user's own store go
podman images --quiet --filter label=scan-planner.stand-in | sort -u | xargs -r podman rmi --force >/dev/null 2>&1 || true
# an image store of its own: the stand-ins below carry the upstream names the files use (python:3.11-slim-
# bookworm, minio/minio, haproxy:2.6), which must never shadow the real images in the user's own store
mkdir -p "$work/storage" "$work/run"
printf '[storage]\ndriver = "overlay"\ngraphroot = "%s"\nrunroot = "%s"\n' "$work/storage" "$work/run" >"$work/storage.conf"
export CONTAINERS_STORAGE_CONF=$work/storage.conf

# --- base images, from Debian's packages -----------------------------------------------------------------
PYTHON_BASE=docker.io/library/python:3.11-slim-bookworm
MINIO=docker.io/minio/minio:RELEASE.2025-04-22T22-12-26Z
HAPROXY=docker.io/library/haproxy:2.6
if ! podman image exists localhost/bookworm-python; then
  say "making a Debian bookworm base with Python 3.11 (mmdebstrap, about 30 s)"
  mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates,passwd \
    bookworm "$work/base.tar" "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main"
  podman import --quiet --change 'CMD ["python3"]' --change 'ENV LANG=C.UTF-8' "$work/base.tar" \
    localhost/bookworm-python >/dev/null
  rm -f "$work/base.tar"
fi
stand_in() {  # stand_in TAG DIR: build DIR's Containerfile as TAG, again only when DIR changes
  local digest
  digest=$(cat "$2"/* | sha256sum | cut -c1-16)
  if [ "$(podman image inspect --format '{{index .Labels "scan-planner.stand-in"}}' "$1" 2>/dev/null)" != "$digest" ]; then
    say "building $1 (a stand-in made from Debian's packages)"
    podman build --quiet --pull=never --label "scan-planner.stand-in=$digest" -t "$1" "$2" >/dev/null
  fi
}
mkdir -p "$work/python" "$work/minio" "$work/haproxy"
cp /etc/ssl/certs/ca-certificates.crt "$work/python/host-ca.crt"  # pip in a build trusts what the host trusts
cat >"$work/python/Containerfile" <<'EOF'
FROM localhost/bookworm-python
COPY host-ca.crt /usr/local/share/ca-certificates/host-ca.crt
# as the official image: `python` and `pip` on PATH, pip free to install system-wide, Python's headers
RUN ln -sf /usr/bin/python3 /usr/local/bin/python && ln -sf /usr/bin/pip3 /usr/local/bin/pip \
    && rm -f /usr/lib/python3.11/EXTERNALLY-MANAGED && update-ca-certificates >/dev/null \
    && apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-dev >/dev/null \
    && rm -rf /var/lib/apt/lists/*
CMD ["python3"]
EOF
stand_in "$PYTHON_BASE" "$work/python"
cat >"$work/minio/Containerfile" <<EOF
FROM $PYTHON_BASE
# an S3 API on :9000 (moto), whatever the arguments; \`mc ready local\` (the compose healthcheck) asks it
RUN pip install --quiet --no-cache-dir 'moto[server]>=5' \\
    && printf '#!/bin/sh\nexec moto_server -H 0.0.0.0 -p 9000\n' >/usr/local/bin/minio \\
    && printf '#!/bin/sh\nexec python3 -c "import urllib.request; urllib.request.urlopen(\\\\"http://127.0.0.1:9000/\\\\", timeout=4)"\n' >/usr/local/bin/mc \\
    && chmod +x /usr/local/bin/minio /usr/local/bin/mc
ENTRYPOINT ["/usr/local/bin/minio"]
EOF
stand_in "$MINIO" "$work/minio"
cat >"$work/haproxy/Containerfile" <<EOF
FROM $PYTHON_BASE
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends haproxy >/dev/null && rm -rf /var/lib/apt/lists/*
CMD ["haproxy", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
EOF
stand_in "$HAPROXY" "$work/haproxy"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_health() {  # wait_health URL SECONDS
  for _ in $(seq "$2"); do
    curl -fsS "$1/health" >/dev/null 2>&1 && return 0
    sleep 1
  done
  return 1
}

image() {
  say "building the Dockerfile: the service image, then its spark target"
  podman build --quiet --pull=never -t localhost/scan-planner:smoke . >/dev/null
  podman build --quiet --pull=never --target spark -t localhost/scan-planner-spark:smoke . >/dev/null
  local port net=scan-planner-smoke vol=scan-planner-smoke-home
  port=$(free_port)
  podman rm -f planner >/dev/null 2>&1 || true
  podman network exists $net || podman network create $net >/dev/null
  podman volume rm -f $vol >/dev/null 2>&1 || true
  podman volume create $vol >/dev/null
  trap 'podman rm -f planner >/dev/null 2>&1 || true; podman volume rm -f '$vol' >/dev/null 2>&1 || true' RETURN
  # the demo warehouse on a volume the spark container mounts at the same path: its executors read the files
  # (the spark container asks for it by its name, which the DNS-rebinding guard must know)
  podman run -d --init --name planner --network $net -p "127.0.0.1:$port:8181" \
    -e SCAN_PLANNER_ALLOWED_HOSTS='["planner"]' -v $vol:/var/lib/scan-planner localhost/scan-planner:smoke >/dev/null
  wait_health "http://127.0.0.1:$port" 120 || { podman logs planner >&2; say "the service did not start"; return 1; }
  curl -fsS "http://127.0.0.1:$port/plan" -d '{"table": "demo.events", "filter": "id < 100"}' | python3 -c \
    'import json, sys; body = json.load(sys.stdin); assert body["tasks"], body; n = len(body["tasks"]); print("[container] a plan of", n, "task" + "s" * (n != 1), file=sys.stderr)'
  local out
  out=$(podman run --rm --init --network $net -v $vol:/var/lib/scan-planner localhost/scan-planner-spark:smoke \
    python examples/read_demo.py --service-url http://planner:8181 2>&1) || { echo "$out" >&2; return 1; }
  grep -E "demo\.events: [0-9]+ partitions \(one per planned task\), [1-9][0-9]* rows$" <<<"$out" >&2 \
    || { echo "$out" >&2; say "the PySpark read did not read the demo table"; return 1; }
  say "image: served, planned and read from PySpark"
}

compose() {
  local venv=$work/compose-venv
  if [ ! -x "$venv/bin/podman-compose" ]; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'podman-compose>=1.2'
  fi
  local project=scan-planner-smoke
  pc() { timeout 900 "$venv/bin/podman-compose" -p $project "$@" >>"$work/compose-up.log" 2>&1; }
  healthy() {  # healthy CONTAINER: podman runs health checks from systemd timers, and there is no systemd here
    for _ in $(seq 120); do
      podman healthcheck run "$1" >/dev/null 2>&1 && return 0
      sleep 1
    done
    say "$1 never became healthy"
    return 1
  }
  trap '"$venv/bin/podman-compose" -p '$project' down -v -t 3 >/dev/null 2>&1 || true' RETURN
  : >"$work/compose-up.log"
  # podman 4.3 cannot wait for `condition: service_healthy`, and its --requires cannot start a container whose
  # dependency has exited (the seed): the services start here one step at a time, in the file's dependency
  # order, each step when the last one is healthy or done
  say "docker-compose.yml: up, in order: s3; seed; planner, planner-2; balancer; spark (its read)"
  pc up -d --build --no-deps s3 && healthy "${project}_s3_1" \
    && pc up -d --build --no-deps seed && podman wait "${project}_seed_1" | grep -qx 0 \
    && pc up -d --build --no-deps planner planner-2 \
    && healthy "${project}_planner_1" && healthy "${project}_planner-2_1" \
    && pc up -d --build --no-deps balancer \
    && pc up -d --build --no-deps spark && podman wait "${project}_spark_1" >/dev/null \
    || { tail -40 "$work/compose-up.log" >&2; say "compose up failed"; return 1; }
  local out
  out=$(podman logs "${project}_spark_1" 2>&1)
  grep -E "demo\.events: [0-9]+ partitions \(one per planned task\), [1-9][0-9]* rows$" <<<"$out" >&2 \
    || { echo "$out" >&2; say "the spark service did not read the demo table"; return 1; }
  curl -fsS -H 'Authorization: Bearer demo-stack-token' http://127.0.0.1:8180/plan -d '{"table": "demo.events"}' \
    >/dev/null || { say "the balancer did not answer a plan"; return 1; }
  say "compose: up, read through the balancer, down"
}

case $what in
image) image ;;
compose) compose ;;
all) image && compose ;;
*) say "usage: bash scripts/container.sh [image|compose|all]"; exit 2 ;;
esac
