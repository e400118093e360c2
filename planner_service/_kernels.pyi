# The compiled loops of planner_service/csrc (see kernels.h). Buffers: any C-contiguous buffer (bytes, numpy).
from typing import Any

def decode_avro(
    nodes: bytes, children: bytes, kinds: bytes, blocks: list[tuple[bytes, int]]
) -> list[tuple[Any, Any, Any, int, int]]: ...
def pack_bins(
    weights: Any, target: int, lookback: int, largest_first: bool, stop_flag: Any, deadline: float, breaks: Any = ...
) -> bytes | None: ...
def count_ranges(sizes: Any, splittable: Any, offset_counts: Any, flat_offsets: Any, target: int) -> int: ...
def json_indent(chunk: Any, state: bytearray) -> bytes: ...
def render_rows(length: int, parts: list[tuple[Any, ...]], prefix: bytes = b"") -> bytes: ...
def split_files(
    sizes: Any,
    splittable: Any,
    offset_counts: Any,
    flat_offsets: Any,
    target: int,
    delete_bytes: Any,
    delete_counts: Any,
    open_file_cost: int,
    stop_flag: Any,
    deadline: float,
) -> tuple[bytes, bytes, bytes, bytes, bytes] | None: ...
def split_weights(lengths: Any, delete_bytes: Any, delete_counts: Any, open_file_cost: int) -> bytes: ...
def merge_bins(
    bins: Any,
    owner: Any,
    start: Any,
    length: Any,
    is_split: Any,
    n_bins: int,
    file_sizes: Any,
    record_counts: Any,
    delete_bytes: Any,
    stop_flag: Any,
    deadline: float,
) -> tuple[bytes, bytes, bytes, bytes, bytes, bytes, bytes] | None: ...
def avro_framing(data: Any) -> tuple[list[tuple[bytes, bytes]], bytes, list[tuple[int, int, int]]]: ...
def split_paths(offsets: Any, data: Any, directories: dict[bytes, int]) -> tuple[bytes, bytes, bytes]: ...
