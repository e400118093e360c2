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
    ],
)
def test_parse_location(text: str, expected: Location) -> None:
    assert parse_location(text) == expected


@pytest.mark.parametrize("text", ["", "gs://b/k", "s3://", "file://otherhost/x"])
def test_bad_locations_are_rejected_with_the_location(text: str) -> None:
    with pytest.raises(BadRequestError) as err:
        parse_location(text)
    assert text in err.value.message or not text
