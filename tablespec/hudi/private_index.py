"""tablespec's earlier, private record-level index (`.hoodie/.tablespec/record_index/`): only where
it is, so that `plan` proposes migrating a table that has one to Hudi's record index (the metadata
table's `record_index` partition) and `apply` removes the folder after building that. No Hudi
reader or writer ever used it."""
from __future__ import annotations

from tablespec.hudi.config import META_FOLDER
from tablespec.hudi.io import Storage, join

PARENT = ".tablespec"                                   # its folder in .hoodie/
FOLDER = f"{META_FOLDER}/{PARENT}/record_index"         # relative to the table's base path


def folder(base: str) -> str:
    return join(base, FOLDER)


def present(storage: Storage, base: str) -> bool:
    return storage.is_dir(folder(base))


def remove(storage: Storage, base: str) -> int:
    """Delete the folder (after Hudi's record index serves); returns how many files it held."""
    path = folder(base)
    if not storage.is_dir(path):
        return 0
    count = sum(1 for _ in storage.walk_files(path))
    storage.delete_tree(path)
    return count


__all__ = ["FOLDER", "folder", "present", "remove"]
