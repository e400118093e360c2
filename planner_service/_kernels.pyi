# The compiled loops of planner_service/csrc (see kernels.h). Buffers: any C-contiguous buffer (bytes, numpy).
from typing import Any

def decode_avro(
    nodes: bytes, children: bytes, kinds: bytes, blocks: list[tuple[bytes, int]]
) -> list[tuple[Any, Any, Any, int, int]]: ...
def pack_bins(weights: Any, target: int, lookback: int, largest_first: bool) -> bytes: ...
