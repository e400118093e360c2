import pytest

from planner_service.errors import BadRequestError
from planner_service.io.locations import Location, parse_location


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
    with pytest.raises(BadRequestError) as err:
        parse_location(text)
    assert text in err.value.message or not text


@pytest.mark.parametrize("location", ["/data/t/x\0y.json", "s3://b/k\x01", "file:///a\nb", "gs://b/\x7fk", "/a\tb"])
def test_control_characters_are_refused_naming_the_location(location: str) -> None:
    with pytest.raises(BadRequestError, match=r"Invalid location .* holds the control character U\+00"):
        parse_location(location)
