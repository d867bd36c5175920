"""Apache Hudi beside tablespec in the test session: read and write tables through Hudi's own
Spark datasource and compare what every reader sees (tablespec, hudi-rs, Apache Hudi)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))

from helpers import hudi_rs_rows, rows, tablespec_rows  # noqa: E402

from tablespec.engine.reader import to_arrow  # noqa: E402

# Hudi's Spark reader adds no columns of its own; these keep its reads close to a plain snapshot.
READ_OPTIONS = {"hoodie.datasource.query.type": "snapshot"}


def hudi_df(spark, location: str, **options: str):
    """A DataFrame of the table as Apache Hudi reads it (metadata table used as Hudi decides)."""
    return spark.read.format("hudi").options(**{**READ_OPTIONS, **options}).load(str(location))


def hudi_rows(spark, location: str, **options: str) -> list[tuple]:
    """The table's rows as Apache Hudi reads them (meta columns included), normalised like `rows`."""
    return rows(to_arrow(hudi_df(spark, location, **options)))


def hudi_write(df, location: str, options: dict[str, str], mode: str = "append") -> None:
    """Write `df` with Apache Hudi's Spark datasource."""
    df.write.format("hudi").options(**options).mode(mode).save(str(location))


def assert_readers_agree(spark, table) -> list[tuple]:
    """tablespec, hudi-rs and Apache Hudi read the same rows (meta columns included); returns them."""
    ours = tablespec_rows(table)
    assert hudi_rs_rows(table.location) == ours, "hudi-rs disagrees with tablespec"
    assert hudi_rows(spark, table.location) == ours, "Apache Hudi disagrees with tablespec"
    return ours


# Apache Hudi's config classes whose ConfigProperty fields name every key a table or writer config uses.
CONFIG_CLASSES = (
    "org.apache.hudi.common.table.HoodieTableConfig", "org.apache.hudi.keygen.constant.KeyGeneratorOptions",
    "org.apache.hudi.DataSourceWriteOptions", "org.apache.hudi.config.HoodieWriteConfig",
    "org.apache.hudi.config.HoodieIndexConfig", "org.apache.hudi.config.HoodieClusteringConfig",
    "org.apache.hudi.config.HoodieCleanConfig", "org.apache.hudi.config.HoodieArchivalConfig",
    "org.apache.hudi.common.config.HoodieMetadataConfig", "org.apache.hudi.config.HoodiePayloadConfig",
)


def _hudi_config_properties(spark) -> dict:
    """Every key (and alternative key) Apache Hudi's config classes define -> its ConfigProperty."""
    jvm = spark._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    found = {}
    for name in CONFIG_CLASSES:
        for f in jvm.java.lang.Class.forName(name, True, loader).getFields():
            if f.getType().getName() == "org.apache.hudi.common.config.ConfigProperty":
                prop = f.get(None)
                for key in [prop.key(), *prop.getAlternatives()]:
                    found[key] = prop
    return found


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
