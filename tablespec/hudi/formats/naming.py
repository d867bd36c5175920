"""Data file names: which file group, which write task and which instant a file belongs to.

Base file: `<fileId>_<writeToken>_<instant>.parquet`; log file (merge-on-read):
`.<fileId>_<baseInstant>.log.<version>_<writeToken>`. The instant in a name is what decides
whether a reader may see the file (see fs_view).
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

META_COLUMNS = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                "_hoodie_partition_path", "_hoodie_file_name")
BASE_FILE_EXTENSIONS = (".parquet", ".orc", ".hfile")

_TOKEN = r"\d+-\d+-\d+"
_BASE = re.compile(rf"(?P<file_id>[^_.][^_]*)_(?P<token>{_TOKEN})_(?P<instant>\d{{14}}|\d{{17}})(?P<ext>\.[a-z]+)")
_LOG = re.compile(rf"\.(?P<file_id>[^_]+)_(?P<instant>\d+)\.(?P<ext>log|archive)\.(?P<version>\d+)"
                  rf"(?:_(?P<token>{_TOKEN}))?(?P<suffix>\.cdc)?")


def write_token(partition_id: int, stage_id: int, attempt_id: int) -> str:
    """`<sparkPartitionId>-<stageId>-<taskAttemptId>`: tells apart files of retried tasks."""
    return f"{partition_id}-{stage_id}-{attempt_id}"


@dataclass(frozen=True)
class BaseFileName:
    file_id: str
    write_token: str
    instant: str
    extension: str = ".parquet"

    @classmethod
    def parse(cls, name: str) -> BaseFileName | None:
        m = _BASE.fullmatch(name)
        if m is None or m["ext"] not in BASE_FILE_EXTENSIONS:
            return None
        return cls(m["file_id"], m["token"], m["instant"], m["ext"])

    def format(self) -> str:
        return f"{self.file_id}_{self.write_token}_{self.instant}{self.extension}"

    def __str__(self) -> str:
        return self.format()


@dataclass(frozen=True)
class LogFileName:
    file_id: str
    base_instant: str
    version: int
    write_token: str | None = None
    extension: str = "log"
    suffix: str = ""

    @classmethod
    def parse(cls, name: str) -> LogFileName | None:
        m = _LOG.fullmatch(name)
        if m is None:
            return None
        return cls(m["file_id"], m["instant"], int(m["version"]), m["token"], m["ext"], m["suffix"] or "")

    def format(self) -> str:
        token = f"_{self.write_token}" if self.write_token else ""
        return f".{self.file_id}_{self.base_instant}.{self.extension}.{self.version}{token}{self.suffix}"


def new_file_id() -> str:
    """A new file group id: a random UUID plus Hudi's `-0` suffix."""
    return f"{uuid.uuid4()}-0"


def bucket_file_id(bucket: int, uuid_str: str | None = None) -> str:
    """The file group id of a bucket: the UUID's first 8 characters replaced by `%08d` of the bucket."""
    if not 0 <= bucket <= 99_999_999:
        raise ValueError(f"bucket number out of range: {bucket}")
    return f"{bucket:08d}{(uuid_str or str(uuid.uuid4()))[8:]}-0"


def bucket_of(file_id: str) -> int | None:
    """The bucket number a bucket-index file group id starts with, or None if it has none."""
    head = file_id[:8]
    return int(head) if len(head) == 8 and head.isdigit() else None
