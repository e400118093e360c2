"""StorageConfig read from Iceberg's storage property names, as PyIceberg and Java's FileIOs name them
(pyiceberg/io/__init__.py: S3_ENDPOINT = "s3.endpoint", S3_ACCESS_KEY_ID = "s3.access-key-id", ...,
GCS_SERVICE_HOST = "gcs.service.host", ADLS_ACCOUNT_NAME = "adls.account-name", ...)."""

from __future__ import annotations

import pyarrow.fs as pafs
import pytest

from iceberg_io import AzureConfig, GcsConfig, S3Config, StorageConfig, filesystem, parse_location, resolve


def test_s3_properties_by_iceberg_names() -> None:
    config = StorageConfig.from_properties(
        {
            "s3.endpoint": "http://127.0.0.1:9000",
            "s3.region": "eu-west-1",
            "s3.access-key-id": "AKID",
            "s3.secret-access-key": "SECRET",
            "s3.session-token": "TOKEN",
            "s3.path-style-access": "false",
            "s3.connect-timeout": "2.5",
            "s3.request-timeout": "10",
        }
    )
    assert config.s3 == S3Config(
        endpoint="http://127.0.0.1:9000",
        region="eu-west-1",
        access_key_id="AKID",
        secret_access_key="SECRET",
        session_token="TOKEN",
        path_style=False,
        connect_timeout=2.5,
        request_timeout=10.0,
    )


def test_short_names_underscores_and_client_region() -> None:
    config = StorageConfig.from_properties(
        {"endpoint": "http://h:1", "access_key_id": "A", "secret-access-key": "S", "client.region": "us-west-2"}
    )
    assert (config.s3.endpoint, config.s3.access_key_id, config.s3.secret_access_key) == ("http://h:1", "A", "S")
    assert config.s3.region == "us-west-2"
    assert StorageConfig.from_properties({"s3.region": "a", "client.region": "b"}).s3.region == "a"


def test_keys_travel_as_a_whole() -> None:
    """A vended key pair replaces the user's, session token included; half a pair changes nothing."""
    own = StorageConfig(S3Config(access_key_id="MINE", secret_access_key="MY-SECRET", session_token="MY-TOKEN"))
    vended = own.with_properties({"s3.access-key-id": "VENDED", "s3.secret-access-key": "V-SECRET"})
    assert (vended.s3.access_key_id, vended.s3.secret_access_key, vended.s3.session_token) == (
        "VENDED",
        "V-SECRET",
        None,
    )
    assert own.with_properties({"s3.access-key-id": "ONLY-THE-ID"}) == own
    assert own.with_properties({"s3.endpoint": "http://e"}).s3.access_key_id == "MINE"


def test_gcs_and_azure_properties() -> None:
    config = StorageConfig.from_properties(
        {
            "gcs.service.host": "http://127.0.0.1:4443",
            "gcs.project-id": "p",
            "gcs.oauth2.token": "t",
            "gcs.oauth2.token-expires-at": "1700000000000",
            "adls.account-name": "acct",
            "adls.sas-token": "sas",
            "adls.blob-storage-authority": "127.0.0.1:10000",
            "adls.blob-storage-scheme": "http",
        }
    )
    assert config.gcs == GcsConfig("http://127.0.0.1:4443", "p", "t", 1700000000000, False)
    assert config.azure == AzureConfig(
        account_name="acct", sas_token="sas", blob_storage_authority="127.0.0.1:10000", blob_storage_scheme="http"
    )
    assert StorageConfig.from_properties({"gcs.anonymous": "true"}).gcs.anonymous is True


@pytest.mark.parametrize(
    ("properties", "named"),
    [
        ({"s3.path-style-access": "maybe"}, "s3.path-style-access"),
        ({"s3.connect-timeout": "soon"}, "s3.connect-timeout"),
        ({"s3.request-timeout": "-1"}, "s3.request-timeout"),
        ({"gcs.oauth2.token-expires-at": "tomorrow"}, "gcs.oauth2.token-expires-at"),
    ],
)
def test_a_bad_value_names_its_property(properties: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError, match=named.replace(".", r"\.")):
        StorageConfig.from_properties(properties)


def test_secrets_stay_out_of_reprs() -> None:
    config = StorageConfig.from_properties(
        {"s3.access-key-id": "A", "s3.secret-access-key": "HIDDEN-1", "s3.session-token": "HIDDEN-2"}
    ).with_properties({"gcs.oauth2.token": "HIDDEN-3", "adls.account-key": "HIDDEN-4", "adls.client-secret": "H5"})
    assert "HIDDEN" not in repr(config) and "H5" not in repr(config)


def test_of_takes_a_config_or_properties() -> None:
    config = StorageConfig(S3Config(region="r"))
    assert StorageConfig.of(config) is config
    assert StorageConfig.of(None) == StorageConfig()
    assert StorageConfig.of({"s3.region": "r"}) == config


def test_one_filesystem_per_store_and_configuration() -> None:
    """The factory keeps a client per configuration: the many reads of a plan share one."""
    s3 = StorageConfig(S3Config(endpoint="http://127.0.0.1:1", region="r"))
    first, path = filesystem(parse_location("s3a://bucket/t/f.parquet"), s3)
    again, _ = resolve("s3://bucket/t/g.parquet", s3)
    other, _ = resolve("s3://bucket/t/g.parquet", StorageConfig(S3Config(endpoint="http://127.0.0.1:2")))
    assert isinstance(first, pafs.S3FileSystem) and path == "bucket/t/f.parquet"
    assert again is first and other is not first
    local, local_path = resolve("file:///tmp/x")
    assert isinstance(local, pafs.LocalFileSystem) and local_path == "/tmp/x"
    with pytest.raises(ValueError, match=r"needs adls\.account-name"):
        resolve("abfs://container/t/f")
