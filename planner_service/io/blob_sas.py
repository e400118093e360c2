"""Azure Blob service SAS for one blob: a URL that reads that blob alone (`sp=r`, `sr=b`) until it expires,
signed with the storage account's key (HMAC-SHA256 over the service SAS string-to-sign, version 2020-12-06,
as Azure's REST reference "Create a service SAS" writes it). What io/presigning.py hands a restricted
principal for each planned file on Azure, as it hands a presigned GET for one on S3."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from urllib.parse import quote, urlencode

from iceberg_io import AzureConfig

VERSION = "2020-12-06"


def blob_sas_url(account: str, container: str, blob: str, azure: AzureConfig, ttl_seconds: int) -> str | None:
    """The URL of `blob` with a read-only SAS good for `ttl_seconds` (None without the account's key)."""
    account = account or azure.account_name or ""
    if not account or not azure.account_key:
        return None
    expiry = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + ttl_seconds))
    scheme = azure.blob_storage_scheme or "https"
    protocol = "https" if scheme == "https" else "https,http"
    resource = f"/blob/{account}/{container}/{blob}"
    fields = ["r", "", expiry, resource, "", "", protocol, VERSION, "b", "", "", "", "", "", "", ""]
    key = base64.b64decode(azure.account_key)
    signature = base64.b64encode(hmac.new(key, "\n".join(fields).encode(), hashlib.sha256).digest()).decode()
    query = urlencode({"sv": VERSION, "sr": "b", "sp": "r", "se": expiry, "spr": protocol, "sig": signature})
    path = f"{quote(container)}/{quote(blob)}"
    if azure.blob_storage_authority:  # an emulator (Azurite): the account in the path
        return f"{scheme}://{azure.blob_storage_authority}/{account}/{path}?{query}"
    return f"{scheme}://{account}.blob.core.windows.net/{path}?{query}"
