"""AWS Glue (`catalog: glue`) through boto3 and the standard AWS environment (credentials chain,
region, `AWS_ENDPOINT_URL`); credentials are never printed or logged: errors carry AWS's code and message.

A database is read with paginated `get_tables` (all its tables in one listing) and `get_partitions`
per registered table; a sync creates the database and table, updates the table, and creates or
deletes partitions in batches, holding the registration Hudi's Hive sync writes.
"""
from __future__ import annotations

from contextlib import contextmanager

from tablespec.catalog.diff import CatalogDiff
from tablespec.catalog.metastore import CatalogError
from tablespec.catalog.registration import Registration

BATCH = 100   # Glue's batch_create_partition limit (batch_delete_partition allows 25)


class GlueCatalog:
    def __init__(self, origin: str):
        self.origin = origin
        self.reads = 0
        self._glue = None

    def __repr__(self) -> str:
        return "GlueCatalog()"

    @contextmanager
    def _client(self, doing: str):
        try:
            import boto3
            from botocore.exceptions import BotoCoreError, ClientError
        except ImportError:
            raise CatalogError(f"{self.origin}: AWS Glue needs boto3 (pip install 'tablespec[catalog]')") from None
        try:
            if self._glue is None:
                self._glue = boto3.client("glue")
            yield self._glue
        except ClientError as e:
            error = e.response.get("Error", {})
            raise CatalogError(f"{self.origin}: {doing} in AWS Glue failed: {error.get('Code')}: "
                               f"{error.get('Message')}") from None
        except BotoCoreError as e:
            raise CatalogError(f"{self.origin}: {doing} in AWS Glue failed: {e}") from None

    def tables(self, database: str) -> dict[str, Registration]:
        self.reads += 1
        with self._client(f"reading database {database}") as glue:
            try:
                pages = list(glue.get_paginator("get_tables").paginate(DatabaseName=database.lower()))
            except glue.exceptions.EntityNotFoundException:
                return {}
            out = {}
            for t in (t for page in pages for t in page["TableList"]):
                parts = ([p for page in glue.get_paginator("get_partitions").paginate(
                    DatabaseName=database.lower(), TableName=t["Name"]) for p in page["Partitions"]]
                    if t.get("PartitionKeys") else [])
                out[t["Name"]] = _registration(database.lower(), t, parts)
            return out

    def sync(self, change: CatalogDiff) -> None:
        if change.in_sync:
            return
        reg = change.desired
        with self._client(f"syncing {reg.name}") as glue:
            if change.register or change.replace:
                try:
                    glue.create_database(DatabaseInput={"Name": reg.database, "Description": "created by tablespec"})
                except glue.exceptions.AlreadyExistsException:
                    pass
                if change.replace:
                    glue.delete_table(DatabaseName=reg.database, Name=reg.table)
                glue.create_table(DatabaseName=reg.database, TableInput=_table(reg))
                _create_partitions(glue, reg, sorted(reg.partitions))
                return
            if change.columns or change.properties or change.location or change.storage:
                current = glue.get_table(DatabaseName=reg.database, Name=reg.table)["Table"]
                table = _table(reg)
                table["Parameters"] = {**current.get("Parameters", {}), **reg.parameters}   # others' are kept
                glue.update_table(DatabaseName=reg.database, TableInput=table)
            drops = [{"Values": list(v)} for v in change.drop_partitions]
            for i in range(0, len(drops), 25):
                glue.batch_delete_partition(DatabaseName=reg.database, TableName=reg.table,
                                            PartitionsToDelete=drops[i:i + 25])
            _create_partitions(glue, reg, list(change.add_partitions))


def _create_partitions(glue, reg: Registration, values: list[tuple[str, ...]]) -> None:
    inputs = [{"Values": list(v), "StorageDescriptor": _storage(reg, reg.partitions[v])} for v in values]
    for i in range(0, len(inputs), BATCH):
        failed = glue.batch_create_partition(DatabaseName=reg.database, TableName=reg.table,
                                             PartitionInputList=inputs[i:i + BATCH]).get("Errors", [])
        if failed:
            first = failed[0].get("ErrorDetail", {})
            raise CatalogError(f"adding {len(failed)} partition(s) of {reg.name} in AWS Glue failed: "
                               f"{first.get('ErrorCode')}: {first.get('ErrorMessage')}")


def _storage(reg: Registration, location: str) -> dict:
    return {"Columns": [{"Name": n, "Type": t} for n, t in reg.columns], "Location": location,
            "InputFormat": reg.input_format, "OutputFormat": reg.output_format, "Compressed": False,
            "NumberOfBuckets": 0, "StoredAsSubDirectories": False,
            "SerdeInfo": {"SerializationLibrary": reg.serde, "Parameters": dict(reg.serde_parameters)}}


def _table(reg: Registration) -> dict:
    return {"Name": reg.table, "StorageDescriptor": _storage(reg, reg.location), "TableType": reg.table_type,
            "PartitionKeys": [{"Name": n, "Type": t} for n, t in reg.partition_keys], "Parameters": dict(reg.parameters)}


def _registration(database: str, t: dict, parts: list[dict]) -> Registration:
    sd = t.get("StorageDescriptor", {})
    serde = sd.get("SerdeInfo", {})
    return Registration(
        database, t["Name"], sd.get("Location", ""), tuple((c["Name"], c["Type"]) for c in sd.get("Columns", [])),
        tuple((c["Name"], c["Type"]) for c in t.get("PartitionKeys", [])), dict(t.get("Parameters", {})),
        dict(serde.get("Parameters", {})), sd.get("InputFormat", ""), sd.get("OutputFormat", ""),
        serde.get("SerializationLibrary", ""), t.get("TableType", ""),
        {tuple(p["Values"]): p.get("StorageDescriptor", {}).get("Location", "") for p in parts})
