"""Apache Hudi beside tablespec in the test session: read and write tables through Hudi's own
Spark datasource and compare what every reader sees (tablespec, hudi-rs, Apache Hudi)."""
from __future__ import annotations

import functools
import json

from _support import SHORT_LIVED_JVM, cli  # noqa: F401 (tests import them from here)
from helpers import hudi_rs_rows, rows, tablespec_rows  # tests/engine, put on sys.path by conftest

from tablespec.engine.reader import to_arrow

# Hudi's Spark reader adds no columns of its own; these keep its reads close to a plain snapshot.
READ_OPTIONS = {"hoodie.datasource.query.type": "snapshot"}


def hudi_df(spark, location: str, **options: str):
    """A DataFrame of the table as Apache Hudi reads it (metadata table used as Hudi decides)."""
    return spark.read.format("hudi").options(**{**READ_OPTIONS, **options}).load(str(location))


def hudi_rows(spark, location: str, **options: str) -> list[tuple]:
    """The table's rows as Apache Hudi reads them (meta columns included), normalised like `rows`."""
    return rows(to_arrow(hudi_df(spark, location, **options)))


def hudi_write(df, location: str, options: dict[str, str], mode: str = "append") -> None:
    """Write `df` with Apache Hudi's Spark datasource (a `path` among the options is the location)."""
    options = {k: v for k, v in options.items() if k != "path"}
    df.write.format("hudi").options(**options).mode(mode).save(str(location))


def assert_readers_agree(spark, table) -> list[tuple]:
    """tablespec, hudi-rs and Apache Hudi read the same rows (meta columns included); returns them."""
    ours = tablespec_rows(table)
    assert hudi_rs_rows(table.location) == ours, "hudi-rs disagrees with tablespec"
    assert hudi_rows(spark, table.location) == ours, "Apache Hudi disagrees with tablespec"
    # nothing wrong with the files or indexes (a record-level index is Hudi's: its writers keep it too)
    report = table.verify()
    assert report.ok, str(report)
    return ours


# A small keyed table whose history grows fast (tests of archiving, upgrades, time travel): its
# columns as Spark DDL, and its spec (`spec_lines`: more lines under `spec:`, e.g. "tableVersion: 9").
HISTORY_DDL = "id string, v bigint, ts bigint, day string"
ARCHIVE_SOON = "{keepCommits: 1, archive: {minCommits: 2, maxCommits: 3}}"


def history_spec(name: str, location: str | None = None, *, database: str | None = None,
                 retention: str = ARCHIVE_SOON, spec_lines: tuple[str, ...] = ()) -> str:
    """The spec of a table of HISTORY_DDL's columns keyed by id, partitioned by day, ordered by ts."""
    metadata = f"{{name: {name}, database: {database}}}" if database else f"{{name: {name}}}"
    extra = "".join(f"  {line}\n" for line in spec_lines)
    return f"""apiVersion: tablespec/v1
kind: HudiTable
metadata: {metadata}
spec:
  location: {location or name}
{extra}  columns:
    - {{name: id, type: string, nullable: false}}
    - {{name: v, type: long}}
    - {{name: ts, type: long}}
    - {{name: day, type: string, nullable: false}}
  recordKey: {{fields: [id]}}
  partitioning: {{fields: [day]}}
  orderingField: ts
  retention: {retention}
"""


# Apache Hudi's config classes whose ConfigProperty fields name every key a table or writer config uses.
CONFIG_CLASSES = (
    "org.apache.hudi.common.table.HoodieTableConfig", "org.apache.hudi.keygen.constant.KeyGeneratorOptions",
    "org.apache.hudi.config.HoodieWriteConfig",
    "org.apache.hudi.config.HoodieIndexConfig", "org.apache.hudi.config.HoodieClusteringConfig",
    "org.apache.hudi.config.HoodieCleanConfig", "org.apache.hudi.config.HoodieArchivalConfig",
    "org.apache.hudi.common.config.HoodieMetadataConfig", "org.apache.hudi.config.HoodiePayloadConfig",
    "org.apache.hudi.config.HoodieLockConfig",
)
SCALA_CONFIG_OBJECTS = ("org.apache.hudi.DataSourceWriteOptions",)  # their ConfigProperty fields are accessors


@functools.lru_cache(maxsize=1)
def _hudi_config_properties(spark) -> dict:
    """Every key (and alternative key) Apache Hudi's config classes define -> its ConfigProperty."""
    jvm, gateway = spark._jvm, spark.sparkContext._gateway
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    config_property = "org.apache.hudi.common.config.ConfigProperty"
    no_args = gateway.new_array(jvm.java.lang.Object, 0)
    props = []
    for name in CONFIG_CLASSES:
        cls = jvm.java.lang.Class.forName(name, True, loader)
        props += [f.get(None) for f in cls.getFields() if f.getType().getName() == config_property]
    for name in SCALA_CONFIG_OBJECTS:
        module = jvm.java.lang.Class.forName(name + "$", True, loader)
        instance = module.getField("MODULE$").get(None)
        props += [m.invoke(instance, no_args) for m in module.getMethods()
                  if m.getParameterCount() == 0 and m.getReturnType().getName() == config_property]
    return {key: p for p in props for key in [p.key(), *p.getAlternatives()]}


def rejected_properties(spark, props: dict[str, str]) -> dict[str, str]:
    """The hoodie.* entries of `props` Apache Hudi would not accept, with Hudi's reason: keys it does
    not define, values outside a key's valid values, and a write config Hudi cannot build from them."""
    known = _hudi_config_properties(spark)
    rejected = {}
    for key, value in props.items():
        if not key.startswith("hoodie."):
            continue
        if key not in known:
            rejected[key] = "not an Apache Hudi config key"
            continue
        try:
            known[key].checkValues(value)
        except Exception as e:  # py4j's Java exception: Hudi's own message
            rejected[key] = _java_message(e)
    if not rejected:  # as Hudi's Spark SQL writers do: table properties (and the table's record key
        jvm = spark._jvm  # as the writer's) loaded into a write config
        java_props = jvm.java.util.Properties()
        for key, value in props.items():
            java_props.setProperty(key, value)
        if "hoodie.table.recordkey.fields" in props:
            java_props.setProperty("hoodie.datasource.write.recordkey.field", props["hoodie.table.recordkey.fields"])
        try:
            config = (jvm.org.apache.hudi.config.HoodieWriteConfig.newBuilder().withPath("/tmp/unused")
                      .withProperties(java_props).build())
            config.getIndexType()
            config.getKeyGeneratorClass()
        except Exception as e:
            rejected["(write config)"] = _java_message(e)
    return rejected


def _java_message(e: Exception) -> str:
    java = getattr(e, "java_exception", None)
    return str(java.toString()) if java is not None else str(e).splitlines()[0]


# --- the CLI as a user runs it -----------------------------------------------------------------


def save_spec(doc: dict, spec_file) -> None:
    with open(spec_file, "w") as f:
        json.dump(doc, f)  # JSON is YAML


def apply_until_done(capsys, spec_file, warehouse) -> list[str]:
    """Plan and apply until the table matches its spec; returns the kinds of every applied action."""
    kinds: list[str] = []
    for _ in range(4):
        code, out, err = cli(capsys, "plan", str(spec_file), "--warehouse", str(warehouse), "--format", "json")
        assert code == 0, err
        actions = [a["kind"] for t in json.loads(out)["tables"] for a in t["actions"]]
        if not actions:
            return kinds
        kinds += actions
        code, out, err = cli(capsys, "apply", str(spec_file), "--warehouse", str(warehouse), "--auto-approve")
        assert code == 0, out + err
    raise AssertionError(f"still changes after applying {kinds}")
