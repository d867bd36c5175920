"""The Spark settings that open the project's catalog, so `spark-sql` / `pyspark` query its tables by name.

They go in a properties file (`spark-sql --properties-file FILE`): the driver's class path (Hudi's
bundle, since the tables are `hudi` data-source tables, and for the embedded metastore the SQLite
JDBC driver) must be known before the JVM starts, which a `--conf` on a running session cannot do.
"""
from __future__ import annotations

from tablespec.catalog import METASTORE_FILE, CatalogError
from tablespec.catalog.metastore import spark_conf
from tablespec.engine.hudi_bundle import SESSION_CONF, bundle_jar, sqlite_jdbc_jar
from tablespec.spec.project import CatalogSetting


def catalog_spark_conf(setting: CatalogSetting) -> dict[str, str]:
    """Spark settings for a session on `setting`'s catalog (jars fetched into the cache when missing)."""
    if setting.kind == "hive":
        db = setting.home / METASTORE_FILE
        return {"spark.driver.extraClassPath": f"{bundle_jar()}:{sqlite_jdbc_jar()}", **SESSION_CONF,
                **spark_conf(db),
                # the `default` database Spark creates on first use: beside the metastore, not in the working directory
                "spark.sql.warehouse.dir": str(db.parent / "spark-warehouse")}
    if setting.kind == "thrift":
        return {"spark.driver.extraClassPath": str(bundle_jar()), **SESSION_CONF,
                "spark.sql.catalogImplementation": "hive", "spark.hadoop.hive.metastore.uris": setting.uri}
    raise CatalogError(f"{setting.origin}: Spark reaches AWS Glue through the AWS Glue Data Catalog client for "
                       "Hive (EMR, AWS Glue jobs), which tablespec does not install; configure that session there")
