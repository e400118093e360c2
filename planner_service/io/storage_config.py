"""Storage configuration: S3's settings, and Iceberg's storage properties (the keys catalogs vend and clients
take: `s3.endpoint`, `s3.access-key-id`, `s3.secret-access-key`, `s3.session-token`, `s3.region` or
`client.region`, `s3.path-style-access`) read into them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class S3Config:
    """S3's settings; the fields are spark_client.storage.new_s3_filesystem's arguments (FileIO passes them all)."""

    endpoint: str | None = None  # e.g. http://127.0.0.1:9000
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    path_style: bool = True
    connect_timeout: float = 5.0  # seconds
    request_timeout: float = 30.0

    def __repr__(self) -> str:  # never the secrets (logs, errors)
        return f"S3Config(endpoint={self.endpoint!r}, region={self.region!r}, key={bool(self.access_key_id)})"


_TRUE = ("true", "1", "yes")


def s3_config(properties: Mapping[str, str], base: S3Config) -> S3Config:
    """`base` with what `properties` set; credentials come as a whole (a vended key never pairs with the
    service's own secret)."""
    config = base
    key_id, secret = properties.get("s3.access-key-id"), properties.get("s3.secret-access-key")
    if key_id and secret:
        config = replace(
            config,
            access_key_id=key_id,
            secret_access_key=secret,
            session_token=properties.get("s3.session-token") or None,
        )
    endpoint = properties.get("s3.endpoint")
    if endpoint:
        config = replace(config, endpoint=endpoint)
    region = properties.get("s3.region") or properties.get("client.region")
    if region:
        config = replace(config, region=region)
    path_style = properties.get("s3.path-style-access")
    if path_style is not None:
        config = replace(config, path_style=path_style.strip().lower() in _TRUE)
    return config
