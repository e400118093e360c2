"""Iceberg's read restrictions (the REST spec's `ReadRestrictions`, for one principal): the column-projection
actions, which types each applies to, and each applied exactly as the spec defines it, to Arrow arrays (the
reader's columns) and to single values (the service's partition constants). It needs pyarrow only.

    from read_restrictions import applied, applicable
    applicable("mask-alphanum", "string", required=False)  # None: it applies; else why not
    applied("show-last-4", pa.array(["4111-1111-1111-4444"]), "string")  # ["nnnn-nnnn-nnnn-4444"]
"""

from __future__ import annotations

from read_restrictions.actions import ACTIONS, HASHED, applicable, default_value
from read_restrictions.arrays import applied, applied_value, new_salt

__all__ = ["ACTIONS", "HASHED", "applicable", "applied", "applied_value", "default_value", "new_salt"]
