"""One Hudi table as a handle: where it lives, and its config, timeline and file-system view.

Every layer above the format takes a `HudiTable` (or, on executors, its `Location`) instead of a
location string, so a table is opened once: its hoodie.properties, active timeline and
file-system view are read on first use and cached. A cached snapshot is what a reader or a
planner wants; a writer must see the table as it is *now* at the points where correctness
depends on it (under the transaction lock, at commit), and calls `refresh()` (or the `fresh_*`
methods) exactly there, saying why.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlparse

from tablespec.errors import HudiFormatError
from tablespec.hudi import partition_buckets
from tablespec.hudi.config import META_FOLDER, TableConfig, read_table_config, timeline_folder, timeline_layout
from tablespec.hudi.formats.commit import CommitMetadata
from tablespec.hudi.fs_view import FileSystemView
from tablespec.hudi.io import (
    LOCAL,
    FileInfo,
    Storage,
    check_location,
    is_object_store,
    join,
    parent_location,
    table_location,
)
from tablespec.hudi.s3 import S3Config, S3Storage
from tablespec.hudi.timeline.active import Timeline, parse_instants
from tablespec.hudi.timeline.instant import Instant
from tablespec.hudi.timeline.lock import DEFAULT_TIMEOUT_SECONDS, TableLock
from tablespec.hudi.timeline.txn_lock import TransactionLock


@dataclass(frozen=True)
class StorageOptions:
    """How to reach object stores (the project file's `storage:` section; never credentials).
    A value passed down with every location: there are no module-level storage settings."""

    values: tuple[tuple[str, str], ...] = ()
    origin: str = "storage options"

    @classmethod
    def of(cls, options: Mapping | StorageOptions | None, origin: str = "storage options") -> StorageOptions:
        """The options, refused now (unknown keys, credentials) rather than at the first S3 request."""
        if isinstance(options, StorageOptions):
            return options
        value = cls(tuple(sorted((str(k), str(v)) for k, v in (options or {}).items())), origin)
        value.s3()
        return value

    def s3(self) -> S3Config:
        return S3Config.from_env(dict(self.values), self.origin)


@dataclass(frozen=True)
class Location:
    """A table's (or a warehouse's) location as a value: the normalized URI and the storage that
    serves it. Picklable: Spark tasks receive it and reach the same store with the same options."""

    uri: str
    storage: Storage = field(default=LOCAL, compare=False, repr=False)

    @classmethod
    def parse(cls, value: str, options: StorageOptions | None = None, origin: str | None = None) -> Location:
        """`value` checked and normalized (see `check_location`); object stores get their
        configuration from `options` and the standard AWS environment."""
        uri = check_location(value, origin)
        if uri.startswith("s3://"):
            return cls(uri, S3Storage(urlparse(uri).netloc, (options or StorageOptions()).s3()))
        return cls(uri, LOCAL)

    @property
    def is_object_store(self) -> bool:
        return is_object_store(self.uri)

    def join(self, *parts: str) -> str:
        """A path below this location (a string: the storage's path for a file or folder)."""
        return join(self.uri, *parts)

    def parent(self) -> Location:
        """The folder holding this location, on the same storage."""
        return Location(parent_location(self.uri), self.storage)

    def child(self, relative: str) -> Location:
        """The location `relative` below this one (a spec's table under its warehouse), on the same storage."""
        return Location(check_location(table_location(self.uri, relative)), self.storage)

    def __str__(self) -> str:
        return self.uri


class AtLocation:
    """What Spark tasks receive of a table (a job's `location` field): its base path and storage."""

    location: Location

    @property
    def base(self) -> str:
        return self.location.uri

    @property
    def storage(self) -> Storage:
        return self.location.storage


class HudiTable:
    """A handle on one Hudi table (which may not exist yet). Reads are lazy and cached until
    `refresh()`; nothing here starts Spark."""

    def __init__(self, location: Location):
        self.location = location
        self._config: TableConfig | None = None
        self._config_read = False
        self._timeline: Timeline | None = None
        self._meta_folders: frozenset[str] = frozenset()   # folders below .hoodie/ as `timeline` listed them
        self._meta_listing: tuple[FileInfo, ...] = ()        # the whole of that listing
        self._leftovers: tuple[str, ...] = ()   # versions 8/9: layout-1 instant files that listing showed in .hoodie/
        self._read: Timeline | None = None   # the last timeline loaded (whose instant contents were read)
        self.generation = 0   # counts what the handle forgot or was told changed: same generation, same state
        self._view: FileSystemView | None = None
        self._earlier: FileSystemView | None = None   # the view a listing with other instants dropped
        self._committed: tuple[FileSystemView, Instant, CommitMetadata] | None = None   # see `committed`

    @classmethod
    def open(cls, value: str | Location, options: StorageOptions | None = None, origin: str | None = None) -> HudiTable:
        """The handle for a location given as a string (the CLI / Python API edge) or a Location."""
        return cls(value if isinstance(value, Location) else Location.parse(value, options, origin))

    @property
    def storage(self) -> Storage:
        return self.location.storage

    @property
    def base(self) -> str:
        """The table's base path as its storage names it."""
        return self.location.uri

    def __repr__(self) -> str:
        return f"HudiTable({self.base!r})"

    # -- state, read once and cached ---------------------------------------------------------
    @property
    def config(self) -> TableConfig | None:
        """hoodie.properties (None: no table here)."""
        if not self._config_read:
            # hoodie.properties first: it names the timeline's folder, which the overlay of a
            # version 8/9 table's hashing configs reads (through this handle's timeline, listed once)
            self._config, self._config_read = read_table_config(self.storage, self.base), True
            try:
                if self._config is not None:
                    self._config = partition_buckets.overlay(self.storage, self.base, self._config,
                                                             lambda: self.timeline.instants)
            except BaseException:
                self._config, self._config_read = None, False   # read again next time
                raise
        return self._config

    def _read_config(self) -> TableConfig | None:
        """hoodie.properties, with the bucket layout Hudi 1.1+ keeps in its hashing configs (versions 8/9)."""
        config = read_table_config(self.storage, self.base)
        return None if config is None else partition_buckets.overlay(self.storage, self.base, config)

    @property
    def exists(self) -> bool:
        return self.config is not None

    @property
    def table_config(self) -> TableConfig:
        """hoodie.properties of a table that exists (callers know it does: they created it, or
        hold its lock after observing it)."""
        if (config := self.config) is None:
            raise HudiFormatError(f"{self.base}: holds no Hudi table")
        return config

    @property
    def timeline(self) -> Timeline:
        """The active timeline as first read through this handle."""
        if self._timeline is None:
            self._load_timeline()
        assert self._timeline is not None   # _load_timeline set it
        return self._timeline

    def _load_timeline(self) -> bool:
        """One listing of .hoodie/: the instants, and (kept) the folders next to them. Returns
        whether they differ from the cached timeline's (True when none was cached). Unchanged, the
        cached view stays: every file a writer adds or removes comes with an instant of its own
        (requested before its first file), so the same instants over the same files are the same view."""
        listed = self.storage.list_dir(join(self.base, META_FOLDER))
        folder = timeline_folder(self.config)
        leftovers: tuple[str, ...] = ()
        if folder == META_FOLDER:
            instants = parse_instants(listed)
        else:   # versions 8 and 9: the timeline has a folder of its own (one more listing)
            instants = parse_instants(self.storage.list_dir(join(self.base, folder)), timeline_layout(self.config))
            leftovers = tuple(f.path for f in listed if not f.is_dir and parse_instants([f]))
        timeline = Timeline(self.storage, self.base, instants, folder)
        folders = frozenset(f.name for f in listed if f.is_dir)
        same = (self._timeline is not None and timeline.instants == self._timeline.instants
                and folders == self._meta_folders)
        if self._read is not None:  # a completed instant's file never changes: its content is kept
            timeline.keep_contents(self._read)
        earlier = self._view or self._earlier
        view = self._view.over(timeline) if same and self._view is not None else None
        if view is None and self._committed is not None:
            view = self._committed[0].after_commit(timeline, *self._committed[1:])
        self._timeline, self._view, self._read, self._committed = timeline, view, timeline, None
        self._earlier = None if view is not None else earlier   # (this process's own commit may follow)
        self._meta_folders, self._leftovers, self._meta_listing = folders, leftovers, tuple(listed)
        return not same

    @property
    def upgrade_leftovers(self) -> tuple[str, ...]:
        """Versions 8/9: version-6 instant files still in .hoodie/ (an upgrade stopped after its
        switch; no reader of the new version lists them), as `timeline`'s listing showed them."""
        if self._timeline is None:
            self._load_timeline()
        return self._leftovers

    @property
    def meta_listing(self) -> tuple[FileInfo, ...]:
        """The listing of .hoodie/ `timeline` came from (sizes and modification times of its
        files: version 6's instant files among them), so that none need list it again."""
        if self._timeline is None:
            self._load_timeline()
        return self._meta_listing

    def lists_folder(self, folder: str) -> bool:
        """Whether the .hoodie/ listing `timeline` came from shows `folder` (its first level):
        a folder it does not show need not be listed."""
        if self._timeline is None:
            self._load_timeline()
        return folder.strip("/").split("/", 1)[0] in self._meta_folders

    @property
    def view(self) -> FileSystemView:
        """The file-system view over `timeline` (file groups and slices of completed instants)."""
        if self._view is None:
            self._view = FileSystemView.build(self.storage, self.base, self.timeline)
        return self._view

    def recorded(self, instant: Instant, content: bytes = b"") -> None:
        """This process created the pending `instant` (with `content`) under the table's locks:
        the cached timeline gains it, the cached view stays (a pending instant shows or hides
        no file), and its content is known. Nothing is read."""
        if self._timeline is None:
            return
        timeline = Timeline(self.storage, self.base, [*self._timeline.instants, instant], self._timeline.folder)
        timeline.keep_contents(self._timeline)
        timeline.remember(instant, content)
        self._view = self._view.over(timeline) if self._view is not None else None
        self._timeline = self._read = timeline
        self.generation += 1

    def wrote_config(self, config: TableConfig) -> None:
        """This process rewrote hoodie.properties (`config`, as written and verified): cached;
        the timeline is unchanged."""
        self._config, self._config_read = config, True
        self.generation += 1

    def view_of(self, timeline: Timeline, partitions=None) -> FileSystemView:
        """A file-system view over another timeline than the cached one (an older state of the
        table, a fresh timeline), or of some `partitions` only; not cached."""
        return FileSystemView.build(self.storage, self.base, timeline, partitions)

    def refresh(self, config: bool = True) -> HudiTable:
        """Forget what was read: the next access reads the table as it is now. `config=False`:
        only the timeline (and view) changed, as after a commit; hoodie.properties stays cached."""
        if config:
            self._config, self._config_read = None, False
        self._timeline, self._view, self._earlier, self._committed = None, None, None, None
        self.generation += 1
        return self

    def committed(self, instant: Instant, metadata: CommitMetadata) -> None:
        """This process completed `instant` with `metadata`: forget what was read, as
        `refresh(config=False)`, but when the next listing shows no other change than that
        completion, the view follows from the last one built and the files the write stats name
        (`FileSystemView.after_commit`): a deltacommit's housekeeping lists no log file again."""
        view = self._view or self._earlier
        self.refresh(config=False)
        if view is not None:
            self._committed = (view, instant, metadata)

    def fresh_timeline(self) -> Timeline:
        """The active timeline as it is now (and cached from here on): for the points where a
        writer must see every instant another writer completed (conflict checks, new instant times).
        The generation moves only if the listing differs from the cached one."""
        if self._load_timeline():
            self.generation += 1
        return self.timeline

    def fresh_config(self) -> TableConfig | None:
        """hoodie.properties as it is now (and cached from here on); the generation moves only
        if it differs from the cached one."""
        config = self._read_config()
        if not self._config_read or config != self._config:
            self.generation += 1
        self._config, self._config_read = config, True
        return self._config

    def listing_snapshot(self):
        """A block in which listings below the table may come from one listing (object stores:
        one paginated LIST); for read-only work."""
        return self.storage.listing_snapshot(self.base)

    # -- locks -------------------------------------------------------------------------------
    def table_lock(self, owner: str | None = None, auto_renew: bool = True) -> TableLock:
        """tablespec's table lock (one whole action or write); not yet taken."""
        return TableLock(self.storage, self.base, owner=owner, auto_renew=auto_renew)

    def transaction_lock(self, who: str = "writer") -> TransactionLock:
        """Hudi's transaction lock (a writer's commit steps); not yet taken."""
        return TransactionLock(self.storage, self.base, who)


__all__ = ["DEFAULT_TIMEOUT_SECONDS", "HudiTable", "Location", "StorageOptions"]
