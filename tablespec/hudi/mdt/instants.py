"""The metadata table's instant files, written in its format (`layout.Format`): 0.15's names and
JSON commit metadata, or Hudi 1.x's `<requested>_<completion>.<action>` completed files holding Avro."""
from __future__ import annotations

from tablespec.errors import HudiFormatError
from tablespec.hudi.formats.commit import CommitMetadata, WriteStat
from tablespec.hudi.formats.commit_avro import encode_commit_metadata
from tablespec.hudi.io import Storage, join
from tablespec.hudi.mdt import layout
from tablespec.hudi.mdt.layout import V1, Format, MetaInstant
from tablespec.hudi.timeline.active import avro_content
from tablespec.hudi.timeline.instant import new_instant_time


def write_instant_file(storage: Storage, base: str, name: str, content: bytes = b"", fmt: Format = V1) -> None:
    """Create one instant file on the metadata timeline, exclusively (a second writer fails)."""
    folder = layout.timeline_path(base, fmt)
    try:
        storage.create_exclusive(join(folder, name), content)
    except FileExistsError:
        raise HudiFormatError(f"{join(folder, name)} already exists") from None


def commit_bytes(metadata: CommitMetadata, fmt: Format = V1) -> bytes:
    """Commit metadata as the metadata table's format stores it: JSON (0.15) or Avro (1.x)."""
    return encode_commit_metadata(metadata, replace=False) if fmt.is_1x else metadata.to_json()


def complete_instant(storage: Storage, base: str, timestamp: str, action: str, content: bytes,
                     fmt: Format = V1) -> MetaInstant:
    """Write an instant's completed file, the commit point. Hudi 1.x names it with a completion
    time after every time on the metadata timeline (the caller holds Hudi's transaction lock)."""
    completion = None
    if fmt.is_1x:
        times = [t for i in layout.timeline(storage, base, fmt) for t in (i.timestamp, i.completion) if t]
        completion = new_instant_time(after=max(times, default=None))
    write_instant_file(storage, base, layout.instant_file(timestamp, action, completion=completion), content, fmt)
    return MetaInstant(timestamp, action, "completed", completion)


def write_stats(storage: Storage, base: str, instant: MetaInstant, fmt: Format = V1) -> list[WriteStat]:
    """The write stats of a completed metadata instant (what files it wrote, how many bytes)."""
    path = join(layout.timeline_path(base, fmt), instant.file_name)
    raw = storage.read_bytes(path)
    try:
        return (CommitMetadata.from_avro(avro_content(raw, path)) if fmt.is_1x else CommitMetadata.from_json(raw)).write_stats()
    except (HudiFormatError, UnicodeDecodeError, TypeError, AttributeError, ValueError) as e:
        raise HudiFormatError(f"{path}: unreadable commit metadata: {e}") from None
