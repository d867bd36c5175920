"""`import`: write a spec for an existing Hudi table, every setting explicit.

The spec is derived from the same registry the planner diffs with, so planning the imported
spec against its table reports no changes.
"""
from __future__ import annotations

import io
import json
import os

from ruamel.yaml import YAML

from tablespec.errors import TablespecError, UnsupportedTableError
from tablespec.hudi.config import index_recorded, table_index_type
from tablespec.plan.settings import LABEL_PREFIX, effective
from tablespec.spec.model import TableSpec
from tablespec.state import TableState

SCHEMA_COMMENT = "# yaml-language-server: $schema=https://tablespec.dev/schema/v1/tablespec.schema.json"


def _csv(value: str | None) -> list[str]:
    return [v for v in (value or "").split(",") if v]


def _int(props: dict, key: str) -> int | None:
    value = effective(props, key)
    return int(value) if value not in (None, "") else None


def _refuse_unrecorded_buckets(state: TableState, props: dict) -> None:
    """Apache Hudi keeps no index type or bucket count in hoodie.properties. A layout of bucket
    file groups (`%08d` bucket prefix, one per bucket and partition) with no index recorded was
    written with a BUCKET index: importing it as SIMPLE would let a write break the layout, and the
    bucket count cannot be read from files (empty buckets have none), so import stops and says so."""
    if index_recorded(props) or not state.file_groups:
        return
    seen: set[tuple[str, int | None]] = set()
    for fg in state.file_groups:
        if fg.bucket is None or (fg.partition, fg.bucket) in seen:
            return
        seen.add((fg.partition, fg.bucket))
    raise UnsupportedTableError(
        f"{state.location}: every file group id carries a bucket number (highest "
        f"{max(b for _, b in seen)}): the table was written with a BUCKET index, but hoodie.properties "
        "records neither the index type nor the bucket count, and the bucket count cannot be determined "
        "from the files. Record the writers' settings in .hoodie/hoodie.properties "
        "(hoodie.index.type=BUCKET, hoodie.bucket.index.num.buckets=N, optionally "
        "hoodie.bucket.index.hash.field) and import again")


def spec_document(state: TableState, warehouse: str) -> dict:
    """The spec (camelCase, as users write it) that describes `state` exactly."""
    if not state.exists:
        raise TablespecError(f"{state.location}: no Hudi table there (no .hoodie/hoodie.properties)")
    if state.config.table_type != "COPY_ON_WRITE":
        raise UnsupportedTableError(f"{state.location}: is a {state.config.table_type} table; "
                                    "tablespec manages COPY_ON_WRITE tables only for now")
    props = state.config.to_properties()
    _refuse_unrecorded_buckets(state, props)
    keys = _csv(props.get("hoodie.table.recordkey.fields"))
    index_type = table_index_type(props)
    index: dict = {"type": index_type}
    if index_type == "BUCKET":
        index["numBuckets"] = _int(props, "hoodie.bucket.index.num.buckets")
        index["hashFields"] = _csv(props.get("hoodie.bucket.index.hash.field")) or keys
        if props.get("tablespec.bucket.partition.buckets"):
            index["partitionBuckets"] = json.loads(props["tablespec.bucket.partition.buckets"])
    elif index_type == "RECORD_LEVEL" and props.get("tablespec.record.level.num.buckets"):
        index["recordLevel"] = {"numBuckets": int(props["tablespec.record.level.num.buckets"])}
    metadata: dict = {"name": props["hoodie.table.name"]}
    if props.get("hoodie.database.name"):
        metadata["database"] = props["hoodie.database.name"]
    labels = {k[len(LABEL_PREFIX):]: v for k, v in props.items() if k.startswith(LABEL_PREFIX)}
    if labels:
        metadata["labels"] = labels
    clustering = {
        "strategy": effective(props, "tablespec.clustering.strategy"),
        "sortColumns": _csv(props.get("hoodie.clustering.plan.strategy.sort.columns")),
        "targetFileSize": _int(props, "hoodie.clustering.plan.strategy.target.file.max.bytes"),
        "smallFileLimit": _int(props, "hoodie.clustering.plan.strategy.small.file.limit"),
        "maxBytesPerGroup": _int(props, "hoodie.clustering.plan.strategy.max.bytes.per.group"),
        "maxGroups": _int(props, "hoodie.clustering.plan.strategy.max.num.groups"),
        "everyNCommits": _int(props, "hoodie.clustering.inline.max.commits"),
    }
    if props.get("hoodie.clustering.plan.strategy.partition.regex.pattern"):
        clustering["partitionFilter"] = props["hoodie.clustering.plan.strategy.partition.regex.pattern"]
    body: dict = {
        "location": os.path.relpath(state.location, os.path.abspath(warehouse)),
        "tableType": effective(props, "hoodie.table.type"),
        "columns": [{"name": c.name, "type": str(c.type), "nullable": c.nullable} for c in state.columns],
        "recordKey": {"fields": keys} if keys else {"autoGenerate": True},
        "partitioning": {"fields": _csv(props.get("hoodie.table.partition.fields")),
                         "hiveStyle": effective(props, "hoodie.datasource.write.hive_style_partitioning") == "true"},
    }
    if props.get("hoodie.table.precombine.field"):
        body["orderingField"] = props["hoodie.table.precombine.field"]
    body.update({
        "index": index,
        "clustering": clustering,
        "retention": {"keepCommits": _int(props, "hoodie.cleaner.commits.retained")},
        "protection": {"preventDestroy": effective(props, "tablespec.protection.prevent.destroy") == "true"},
    })
    doc = {"apiVersion": "tablespec/v1", "kind": "HudiTable", "metadata": metadata, "spec": body}
    TableSpec.model_validate(doc)  # an import that would not validate is a bug, not a user error
    return doc


def observed_spec(state: TableState) -> TableSpec:
    """The table as it is, as a spec object (for actions that read it under its current layout)."""
    return TableSpec.model_validate(spec_document(state, os.path.dirname(state.location)))


def import_yaml(state: TableState, warehouse: str) -> str:
    yaml = YAML()
    yaml.default_flow_style = None
    yaml.width = 4096
    out = io.StringIO()
    out.write(SCHEMA_COMMENT + "\n")
    yaml.dump(spec_document(state, warehouse), out)
    return out.getvalue()
