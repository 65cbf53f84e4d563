"""Checksums of stored results: a file whose contents changed after it was written is refused.

:func:`tree_checksum` hashes every group's variables and coordinates (names, dims, dtypes,
shapes and values) and attrs in a fixed order, so it is the same before writing and after
reading back a netCDF or Zarr file, and it changes when any stored byte of the data does.
Writers store it in the root attrs under :data:`CHECKSUM_ATTR`; readers recompute it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

CHECKSUM_ATTR = "benchmirt_checksum"
"""Root attr holding the checksum of everything else in the tree."""


def tree_checksum(tree: xr.DataTree) -> str:
    """BLAKE2b digest of a DataTree's data, coordinates and attrs (the checksum attr excluded)."""
    digest = hashlib.blake2b(digest_size=32)
    for node in sorted(tree.subtree, key=lambda n: n.path):
        digest.update(f"\x1dgroup {node.path}".encode())
        _update_attrs(digest, node.attrs)
        dataset = node.to_dataset(inherit=False)
        for name in sorted(map(str, dataset.variables)):
            variable = dataset.variables[name]
            digest.update(f"\x1evar {name} {variable.dims} {variable.shape}".encode())
            _update_values(digest, variable.values)
            _update_attrs(digest, variable.attrs)
    return digest.hexdigest()


def _update_values(digest: Any, values: np.ndarray) -> None:
    values = np.asarray(values)
    if values.dtype.kind in "OUS":
        digest.update(b"text")
        digest.update("\x1f".join(map(str, values.ravel())).encode("utf-8", "surrogatepass"))
        return
    if values.dtype.kind == "b":
        values = values.astype(np.int8)
    digest.update(values.dtype.str.encode())
    digest.update(np.ascontiguousarray(values).tobytes())


def _update_attrs(digest: Any, attrs: Mapping[str, Any]) -> None:
    for key in sorted(attrs):
        if key == CHECKSUM_ATTR or key.startswith("_"):
            continue
        value = attrs[key]
        text = value if isinstance(value, str) else repr(np.asarray(value).tolist())
        digest.update(f"\x1fattr {key}={text}".encode("utf-8", "surrogatepass"))


def with_checksum(tree: xr.DataTree, extra_attrs: Mapping[str, Any] | None = None) -> xr.DataTree:
    """A shallow copy of ``tree`` with ``extra_attrs`` and the checksum in its root attrs."""
    out = tree.copy(deep=False)
    out.attrs = {k: v for k, v in {**tree.attrs, **(extra_attrs or {})}.items() if k != CHECKSUM_ATTR}
    out.attrs[CHECKSUM_ATTR] = tree_checksum(out)
    return out


def checksum_problem(tree: xr.DataTree) -> str | None:
    """``None`` when the stored checksum matches the contents, else why it does not."""
    stored = tree.attrs.get(CHECKSUM_ATTR)
    if stored is None:
        return "it carries no checksum"
    if tree_checksum(tree) != stored:
        return "its contents changed after it was written (checksum mismatch)"
    return None
