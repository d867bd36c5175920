"""A Hive metastore over Thrift (`catalog: thrift://HOST:PORT`), through `hive-metastore-client`'s
generated Thrift bindings (install `tablespec[catalog]`). No JVM: plan reads it like the embedded one.

A database is read with two calls (its table names, then those tables in one batch) and one
`get_partitions` per registered table; a sync is the calls Hudi's hms-mode sync makes: create
the database and table, alter the table (cascading columns to partitions), add and drop partitions
(never their data: the tables are EXTERNAL).
"""
from __future__ import annotations

import getpass
import logging
import socket
import time
from contextlib import contextmanager
from urllib.parse import urlparse

from tablespec.catalog.diff import CatalogDiff
from tablespec.catalog.metastore import CatalogError
from tablespec.catalog.registration import Registration

TIMEOUT_MS = 10_000


@contextmanager
def _quiet():
    """The Thrift library logs a failed connection itself (`Could not connect to any of ...`) before it
    raises; tablespec's own error line says it, once, so the library's loggers stay silent meanwhile."""
    thrift_log = logging.getLogger("thrift")
    level = thrift_log.level
    thrift_log.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        thrift_log.setLevel(level)


class ThriftMetastore:
    """A Hive metastore at `uri` (thrift://HOST:PORT, checked by `spec.project.catalog_problem`);
    `origin` names the setting in errors; `timeout_ms` bounds each connection and each answer."""

    def __init__(self, uri: str, origin: str, timeout_ms: int = TIMEOUT_MS):
        parsed = urlparse(uri)
        self.uri, self.origin, self.timeout_ms = uri, origin, timeout_ms
        self.host, self.port = parsed.hostname or "", parsed.port or 9083
        self.reads = 0

    def _reason(self, e: Exception) -> str:
        """Why a call failed, in words (the library says `unexpected exception` for a timeout)."""
        inner = getattr(e, "inner", None)
        if isinstance(inner, socket.gaierror):
            return f"{self.host} does not resolve ({inner.strerror})"
        if isinstance(inner, TimeoutError):
            return f"no answer within {self.timeout_ms / 1000:g}s"
        return getattr(e, "message", None) or str(e) or type(e).__name__

    def __repr__(self) -> str:
        return f"ThriftMetastore({self.uri})"

    @contextmanager
    def _client(self, doing: str):
        try:
            from thrift.protocol import TBinaryProtocol
            from thrift.Thrift import TException
            from thrift.transport import TSocket, TTransport
            from thrift_files.libraries.thrift_hive_metastore_client import ThriftHiveMetastore
        except ImportError:
            raise CatalogError(f"{self.origin}: a Thrift metastore needs the `hive-metastore-client` package "
                               "(pip install 'tablespec[catalog]')") from None
        connection = TSocket.TSocket(self.host, self.port)
        connection.setTimeout(self.timeout_ms)
        transport = TTransport.TBufferedTransport(connection)
        with _quiet():
            try:
                transport.open()
            except (TException, OSError, UnicodeError) as e:
                inner = getattr(e, "inner", None)
                why = self._reason(e) if inner is not None else \
                    f"no connection to {self.host}:{self.port} (refused, or no answer within {self.timeout_ms / 1000:g}s)"
                raise CatalogError(f"{self.origin}: cannot reach the Hive metastore at {self.uri}: {why}") from None
            try:
                yield ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport))
            except (TException, OSError) as e:
                raise CatalogError(f"{self.origin}: {doing} in the Hive metastore at {self.uri} failed: "
                                   f"{self._reason(e)}") from None
            finally:
                transport.close()

    def tables(self, database: str) -> dict[str, Registration]:
        self.reads += 1
        from thrift_files.libraries.thrift_hive_metastore_client.ttypes import NoSuchObjectException
        with self._client(f"reading database {database}") as client:
            try:
                names = client.get_all_tables(database.lower())
            except NoSuchObjectException:
                return {}
            out = {}
            for t in client.get_table_objects_by_name(database.lower(), names) if names else []:
                parts = client.get_partitions(t.dbName, t.tableName, -1) if t.partitionKeys else []
                out[t.tableName] = _registration(t, parts)
            return out

    def sync(self, change: CatalogDiff) -> None:
        if change.in_sync:
            return
        from thrift_files.libraries.thrift_hive_metastore_client.ttypes import (
            AlreadyExistsException,
            Database,
            NoSuchObjectException,
        )
        reg = change.desired
        with self._client(f"syncing {reg.name}") as client:
            if change.register or change.replace:
                try:
                    client.create_database(Database(name=reg.database, description="created by tablespec",
                                                    parameters={}, ownerName=getpass.getuser(), ownerType=1))
                except AlreadyExistsException:
                    pass
                if change.replace:
                    client.drop_table(reg.database, reg.table, False)
                client.create_table(_table(reg))
                if reg.partitions:
                    client.add_partitions([_partition(reg, v) for v in sorted(reg.partitions)])
                return
            if change.columns or change.properties or change.location or change.storage:
                try:
                    current = client.get_table(reg.database, reg.table)
                except NoSuchObjectException:
                    current = None
                table = _table(reg)
                if current is not None:
                    table.createTime = current.createTime
                    table.parameters = {**current.parameters, **reg.parameters}   # others' properties are kept
                client.alter_table_with_cascade(reg.database, reg.table, table, bool(change.columns))
            for values in change.drop_partitions:
                client.drop_partition(reg.database, reg.table, list(values), False)
            if change.add_partitions:
                client.add_partitions([_partition(reg, v) for v in change.add_partitions])


def _registration(t, parts) -> Registration:
    sd = t.sd
    return Registration(
        t.dbName, t.tableName, sd.location or "", tuple((c.name, c.type) for c in sd.cols or []),
        tuple((c.name, c.type) for c in t.partitionKeys or []), dict(t.parameters or {}),
        dict(sd.serdeInfo.parameters or {}) if sd.serdeInfo else {}, sd.inputFormat or "", sd.outputFormat or "",
        (sd.serdeInfo.serializationLib or "") if sd.serdeInfo else "", t.tableType or "",
        {tuple(p.values): p.sd.location for p in parts})


def _storage(reg: Registration, location: str):
    from thrift_files.libraries.thrift_hive_metastore_client.ttypes import FieldSchema, SerDeInfo, StorageDescriptor
    return StorageDescriptor(
        cols=[FieldSchema(name=n, type=t, comment="") for n, t in reg.columns], location=location,
        inputFormat=reg.input_format, outputFormat=reg.output_format, compressed=False, numBuckets=0,
        serdeInfo=SerDeInfo(name=None, serializationLib=reg.serde, parameters=dict(reg.serde_parameters)),
        bucketCols=[], sortCols=[], parameters={}, storedAsSubDirectories=False)


def _table(reg: Registration):
    from thrift_files.libraries.thrift_hive_metastore_client.ttypes import FieldSchema, Table
    now = int(time.time())
    return Table(tableName=reg.table, dbName=reg.database, owner=getpass.getuser(), createTime=now, lastAccessTime=0,
                 retention=0, sd=_storage(reg, reg.location),
                 partitionKeys=[FieldSchema(name=n, type=t, comment="") for n, t in reg.partition_keys],
                 parameters=dict(reg.parameters), tableType=reg.table_type)


def _partition(reg: Registration, values: tuple[str, ...]):
    from thrift_files.libraries.thrift_hive_metastore_client.ttypes import Partition
    now = int(time.time())
    return Partition(values=list(values), dbName=reg.database, tableName=reg.table, createTime=now, lastAccessTime=0,
                     sd=_storage(reg, reg.partitions[values]), parameters={})
