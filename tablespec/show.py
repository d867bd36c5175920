"""`show`: a table's observed state for people (text) and scripts (JSON)."""
from __future__ import annotations

import json
from collections import Counter

from tablespec.hudi import keygen, keys
from tablespec.hudi.config import RECORD_LEVEL, index_recorded, table_index_type
from tablespec.hudi.mdt.layout import SECONDARY_INDEX_PREFIX
from tablespec.hudi.mdt.record_index import RECORD_INDEX
from tablespec.plan.clustering import describe_coverage, recorded_coverage
from tablespec.plan.settings import (
    HASH_FIELDS,
    HIVE_STYLE,
    KEY_GENERATOR,
    NUM_BUCKETS,
    PARTITION_FIELDS,
    RECORD_KEY_FIELDS,
    RECORD_LEVEL_BUCKETS,
    URL_ENCODE,
    effective,
)
from tablespec.spec.sizes import human_bytes
from tablespec.state import TableState
from tablespec.wording import counted


def state_dict(state: TableState) -> dict:
    props = state.table_config.to_properties()
    per_partition = Counter(fg.partition for fg in state.file_groups)
    return {
        "location": state.location,
        "name": props.get(keys.TABLE_NAME.name),
        "database": props.get(keys.DATABASE_NAME.name),
        "tableType": state.table_config.table_type,
        "tableVersion": state.table_config.version,
        "recordKey": props.get(RECORD_KEY_FIELDS),
        "keyGenerator": props.get(KEY_GENERATOR),
        "partitionFields": effective(props, PARTITION_FIELDS),
        "hiveStyle": effective(props, HIVE_STYLE) == "true",
        "urlEncode": effective(props, URL_ENCODE) == "true",
        "partitionTimestamp": _timestamp(props),
        "orderingField": props.get(keys.PRECOMBINE_FIELD.name),
        "index": {"type": table_index_type(props), "recorded": index_recorded(props),
                  "numBuckets": _int(props.get(NUM_BUCKETS)),
                  "hashFields": effective(props, HASH_FIELDS),
                  "recordLevel": {"fileGroups": _int(props.get(RECORD_LEVEL_BUCKETS)),
                                  "built": RECORD_INDEX in state.metadata_table.partitions,
                                  "privateIndex": state.private_index}
                  if table_index_type(props) == RECORD_LEVEL else None},
        "lastClustering": state.last_clustering,
        "commitsSinceClustering": state.commits_since_clustering,
        "clusteringCoverage": _coverage(state),
        "columns": [{"name": c.name, "type": str(c.type), "nullable": c.nullable} for c in state.columns],
        "headInstant": state.head,
        "commits": state.commits,
        "pendingInstants": [f"{i.timestamp}.{i.action}.{i.state}" for i in state.pending],
        "partitions": len(state.partitions),
        "fileGroups": len(state.file_groups),
        "fileGroupsPerPartition": dict(sorted(per_partition.items())),
        "totalBytes": state.total_bytes,
        "logFiles": sum(fg.log_files for fg in state.file_groups),
        "logBytes": sum(fg.log_bytes for fg in state.file_groups),
        "slicesWithLogFiles": sum(1 for fg in state.file_groups if fg.log_files),
        "metadataTable": state.metadata_table.to_dict(),
    }


def _int(value: str | None) -> int | str | None:
    """A count hoodie.properties stores as text, typed for scripts reading `show --format json`
    (a value that is no number is shown as it is)."""
    return int(value) if value is not None and value.strip().isdigit() else value


def _coverage(state: TableState) -> dict | None:
    """How much is laid out as the layout hoodie.properties records (None: NONE, or no data)."""
    return coverage_dict(recorded_coverage(state))


def coverage_dict(cov: dict | None) -> dict | None:
    """A clustering coverage (plan/clustering.coverage) with the keys scripts read."""
    if cov is None:
        return None
    return {"layout": cov["layout"], "fileGroups": cov["file_groups"], "laidOut": cov["laid_out"],
            "percent": cov["percent"], "bytes": cov["bytes"], "laidOutBytes": cov["laid_out_bytes"],
            "partitions": cov["partitions"]}


def _timestamp(props: dict) -> dict | None:
    """The time-formatted partition field and its `hoodie.keygen.timebased.*` settings, if any."""
    field, _ = keygen.timestamp_field_of(props)
    if field is None:
        return None
    return {"field": field, **{k[len(keygen.PREFIX):]: v for k, v in sorted(props.items()) if k.startswith(keygen.PREFIX)}}


def _metadata_table_text(mdt: dict) -> str:
    """Hudi's metadata table in one line: folder, the partitions hoodie.properties names, and the size of
    each data-skipping index (column and partition statistics, bloom filters, secondary indexes)."""
    if not mdt["present"] and not mdt["partitions"] and not mdt["inflightPartitions"]:
        return "(no Hudi metadata table)"
    where = f".hoodie/metadata, {human_bytes(mdt['bytes'])}" if mdt["present"] else "no .hoodie/metadata folder"
    sizes = mdt.get("partitionBytes") or {}
    skipping = [f"{p} {human_bytes(sizes[p])}" for p in mdt["partitions"] if p in sizes and (
        p in ("column_stats", "partition_stats", "bloom_filters") or p.startswith(SECONDARY_INDEX_PREFIX))]
    return (f"Hudi metadata table: {where}; partitions {', '.join(mdt['partitions']) or '(none)'}; "
            f"inflight {', '.join(mdt['inflightPartitions']) or '(none)'}"
            + (f"; data-skipping indexes {', '.join(skipping)}" if skipping else ""))


def show_json(state: TableState) -> str:
    return json.dumps(state_dict(state), indent=2) + "\n"


def show_text(state: TableState) -> str:
    d = state_dict(state)
    index = d["index"]["type"] + (f" ({counted(d['index']['numBuckets'], 'bucket')} on {d['index']['hashFields']})"
                                  if d["index"]["type"] == "BUCKET" else "")
    if not d["index"]["recorded"]:  # tables Apache Hudi created: its writers keep the index in their config
        index += " (assumed: hoodie.properties records no index type)"
    if d["index"]["recordLevel"]:
        rl = d["index"]["recordLevel"]
        index += (f" (Hudi's record index, {counted(rl['fileGroups'], 'file group')})" if rl["built"] and rl["fileGroups"]
                  else " (Hudi's record index)" if rl["built"] else " (Hudi's record index not built yet)")
        if rl["privateIndex"]:
            index += " (tablespec's private index folder: migrated by the next apply)"
    lines = [
        f"table       {(d['database'] + '.') if d['database'] else ''}{d['name']}",
        f"location    {d['location']}",
        f"type        {d['tableType']} (table version {d['tableVersion']})",
        f"record key  {d['recordKey'] or '(auto-generated)'}  [{(d['keyGenerator'] or '').rsplit('.', 1)[-1]}]",
        f"partitions  {d['partitionFields'] or '(none)'}{' hive-style' if d['hiveStyle'] and d['partitionFields'] else ''}"
        f"{' url-encoded' if d['urlEncode'] and d['partitionFields'] else ''}"
        + (f"; {ts['field']} formatted as {ts.get('output.dateformat', '?')} in {ts.get('timezone', '?')}"
           f" from {ts.get('timestamp.type', 'an unrecorded type')}" if (ts := d["partitionTimestamp"]) else ""),
        f"ordering    {d['orderingField'] or '(none)'}",
        f"index       {index}",
        f"head        {d['headInstant'] or '(no commits)'}  ({counted(d['commits'], 'completed commit')})",
        f"pending     {', '.join(d['pendingInstants']) or '(none)'}",
        f"clustering  {('last ' + d['lastClustering']) if d['lastClustering'] else 'never'}, "
        f"{counted(d['commitsSinceClustering'], 'commit')} since"
        + (f"; {describe_coverage(cov)}" if (cov := recorded_coverage(state)) else ""),
        f"data        {counted(d['fileGroups'], 'file group')} in {counted(d['partitions'], 'partition')}, "
        f"{human_bytes(d['totalBytes'])}"
        + (f"; {counted(d['logFiles'], 'log file')} ({human_bytes(d['logBytes'])}) in "
           f"{counted(d['slicesWithLogFiles'], 'file slice')}" if d["logFiles"] else ""),
        f"metadata    {_metadata_table_text(d['metadataTable'])}",
        "columns",
    ]
    lines += [f"  {c['name']:<24} {c['type']}{'' if c['nullable'] else ' not null'}" for c in d["columns"]]
    return "\n".join(lines) + "\n"
