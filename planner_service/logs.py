"""Structured logs: one JSON object per line, with whatever a call passes in `extra`."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime", "taskName"}
# uvicorn passes each of its messages again with ANSI colours (`color_message`), for its own terminal formatter
_DROPPED = _STANDARD | {"color_message"}
# Libraries that log what goes over the wire at debug level: botocore writes the signing material of each
# request (the service's session token among it) and the body of each answer (STS AssumeRole's keys), so
# the service's debug log stays above their debug (credentials never reach a log).
WIRE_LOGGERS = ("botocore", "boto3", "s3transfer", "urllib3", "httpcore")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        out.update({k: v for k, v in record.__dict__.items() if k not in _DROPPED})
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure_logging(level: str = "INFO") -> None:
    """JSON lines on stderr for our loggers and uvicorn's."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)  # we log requests ourselves
    for name in WIRE_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.INFO, root.level))
