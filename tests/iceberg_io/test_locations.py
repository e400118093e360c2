"""Locations as Iceberg writes them (Java's and PyIceberg's FileIO schemes), parsed once for the service and
the executors' reader."""

from __future__ import annotations

import pytest

from iceberg_io import InvalidLocation, Location, parse_location
from planner_service.errors import BadRequestError
from planner_service.io import locations as service_locations


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/data/t/metadata/v1.metadata.json", Location("file", "/data/t/metadata/v1.metadata.json")),
        ("file:/data/t", Location("file", "/data/t")),
        ("file:///data/t", Location("file", "/data/t")),
        ("file://localhost/data/t", Location("file", "/data/t")),
        ("file:/data/a%20b", Location("file", "/data/a b")),
        ("s3://bucket/key/x", Location("s3", "bucket/key/x")),
        ("s3a://bucket/key/x", Location("s3", "bucket/key/x")),
        ("S3N://bucket/key/", Location("s3", "bucket/key")),
        ("gs://bucket/key/x", Location("gs", "bucket/key/x")),
        ("abfss://c@acct.dfs.core.windows.net/k/x", Location("azure", "acct/c/k/x")),
        ("wasbs://c@acct.blob.core.windows.net/k/x", Location("azure", "acct/c/k/x")),
        ("abfs://c/k/x", Location("azure", "/c/k/x")),  # the account from the settings
        ("hdfs://nn:8020/w/t", Location("hdfs", "nn:8020/w/t")),
    ],
)
def test_parse_location(text: str, expected: Location) -> None:
    assert parse_location(text) == expected


@pytest.mark.parametrize(
    "text", ["", "ftp://b/k", "s3://", "gs:///k", "abfss://@acct.dfs.core.windows.net/k", "file://otherhost/x"]
)
def test_bad_locations_are_rejected_with_the_location(text: str) -> None:
    with pytest.raises(InvalidLocation) as err:
        parse_location(text)
    assert text in str(err.value) or not text
    with pytest.raises(BadRequestError) as refused:  # the service's reading: a bad request, the same message
        service_locations.parse_location(text)
    assert refused.value.message == str(err.value)


@pytest.mark.parametrize("location", ["/data/t/x\0y.json", "s3://b/k\x01", "file:///a\nb", "gs://b/\x7fk", "/a\tb"])
def test_control_characters_are_refused_naming_the_location(location: str) -> None:
    with pytest.raises(InvalidLocation, match=r"Invalid location .* holds the control character U\+00"):
        parse_location(location)


@pytest.mark.parametrize(
    ("location", "root", "within"),
    [
        ("s3://b/warehouse/t/data/f", "s3a://b/warehouse", True),  # s3a: and s3: are one store
        ("s3://b/warehouse", "s3://b/warehouse/", True),
        ("s3://b/warehouse2/t", "s3://b/warehouse", False),  # a prefix of the name is not a parent
        ("gs://b/warehouse/t", "s3://b/warehouse", False),
        ("/data/t/f", "file:///data", True),
    ],
)
def test_within(location: str, root: str, within: bool) -> None:
    assert parse_location(location).within(parse_location(root)) is within
