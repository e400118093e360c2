# syntax=docker/dockerfile:1
# The scan-planner service image: `docker build -t scan-planner .` then
#   docker run -p 8181:8181 scan-planner        # serves the embedded demo table demo.events
# docker-compose.yml runs it against an S3 store instead (see docs/guides/deploying.md, "Docker").
#
# Installed as scripts/setup.sh installs it (a venv at .venv in the project directory, pip upgraded, then the
# project), minus what only development needs: no `-e` (the image never edits its code) and no `[dev]` extras
# (pytest, ruff, mypy, moto). tests/test_deploy_files.py holds the two to that.

# bookworm pins the Debian release, so the `spark` stage below finds openjdk-17 (Spark 3.5 and 4 both run on 17)
FROM python:3.11-slim-bookworm AS planner

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

# a non-root user; the demo warehouse (written on first start when no catalog is configured) and the
# compose stack's shared SQL catalog volume live under SCAN_PLANNER_HOME, the only directory it may write
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin planner \
    && mkdir -p /var/lib/scan-planner/catalog \
    && chown -R planner:planner /var/lib/scan-planner
ENV SCAN_PLANNER_HOME=/var/lib/scan-planner

WORKDIR /app
COPY . /app
# owned by root, so the service cannot change its own code
# (gcc builds the compiled loops in planner_service/csrc, then goes: the image runs, it does not build)
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && python -m venv .venv \
    && .venv/bin/python -m pip install --quiet --upgrade pip \
    && .venv/bin/python -m pip install --quiet --disable-pip-version-check . \
    && apt-get purge -y --auto-remove gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
ENV VIRTUAL_ENV=/app/.venv \
    PATH=/app/.venv/bin:$PATH

USER planner
EXPOSE 8181
# slim images have no curl: ask /health with the venv's python (the port follows SCAN_PLANNER_PORT)
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('SCAN_PLANNER_PORT', '8181') + '/health', timeout=4)"]
CMD ["scan-planner", "serve", "--host", "0.0.0.0"]


# PySpark on the same install, for the client example: docker build --target spark .
FROM planner AS spark
USER root
# (man1 is missing from slim images and the JRE's postinst links a man page into it)
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
RUN .venv/bin/python -m pip install --quiet --disable-pip-version-check "pyspark[sql]>=3.5,<5"
ENV PYSPARK_PYTHON=/app/.venv/bin/python
USER planner
HEALTHCHECK NONE
CMD ["python", "examples/read_demo.py", "--service-url", "http://planner:8181"]


# `docker build .` (and compose's `build: .`) gives the service image, not the Spark one
FROM planner
