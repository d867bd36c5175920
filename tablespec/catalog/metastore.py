"""The embedded Hive metastore: a SQLite database under the project that Spark's built-in Hive
client (Hive 2.3, DataNucleus) uses as its metastore, and that tablespec reads and writes with
Python's sqlite3, so `plan` observes the catalog without a JVM.

The rows are the ones the metastore itself writes for a table, its storage descriptor, serde,
columns, parameters and partitions; ids come from DataNucleus's SEQUENCE_TABLE the way its
`increment` strategy takes them (a block past NEXT_VAL), so a Spark session using the same file
never reuses one. Spark's side of the setting is `spark_conf`.
"""
from __future__ import annotations

import getpass
import re
import sqlite3
import time
from collections import defaultdict
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from tablespec.catalog.diff import CatalogDiff
from tablespec.catalog.registration import Registration
from tablespec.errors import TablespecError
from tablespec.faults import crash_point

SCHEMA = Path(__file__).with_name("metastore_schema.sql")
MODEL = "org.apache.hadoop.hive.metastore.model."
_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^')


class CatalogError(TablespecError):
    """The catalog cannot be read or written (unreachable, missing, refused): names the setting."""


def file_uri(db: Path) -> str:
    """`db` as a `file:` URI, percent-encoded: a `#`, `?` or `%` in a folder name stays part of the path
    (unquoted, SQLite and sqlite-jdbc take them for a fragment, the parameters or an escape)."""
    return db.absolute().as_uri()


def spark_conf(db: Path) -> dict[str, str]:
    """What a SparkSession needs to use this metastore (with the sqlite-jdbc jar on the driver's class path).
    One connection, no pool and sequences in the caller's transaction: SQLite has one writer at a time."""
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:sqlite:{file_uri(db)}?journal_mode=WAL&busy_timeout=30000",
        "spark.hadoop.javax.jdo.option.ConnectionDriverName": "org.sqlite.JDBC",
        "spark.hadoop.datanucleus.connectionPoolingType": "None",
        "spark.hadoop.datanucleus.valuegeneration.transactionAttribute": "UsePM",
        "spark.hadoop.datanucleus.schema.autoCreateAll": "false",
        "spark.hadoop.hive.metastore.schema.verification": "false",
    }


def escape_path_name(value: str) -> str:
    """Hive's escaping of a partition value in a partition name (`FileUtils.escapePathName`)."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED or ord(c) < 0x20 else c for c in value) or "__HIVE_DEFAULT_PARTITION__"


@cache
def schema_statements() -> tuple[str, ...]:
    """The schema script's statements, one by one (run inside one transaction: `executescript` commits each)."""
    out, pending = [], ""
    for line in SCHEMA.read_text().splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            out.append(pending.strip())
            pending = ""
    return tuple(out)


@cache
def schema_tables() -> frozenset[str]:
    return frozenset(m.group(1) for s in schema_statements() if (m := re.search(r"^CREATE TABLE (\w+)", s, re.M)))


def _quoted(name: str) -> str:
    """An SQL identifier for a table name read from the file (which may be anything)."""
    return '"' + name.replace('"', '""') + '"'


def partition_name(keys: Iterable[tuple[str, str]], values: tuple[str, ...]) -> str:
    return "/".join(f"{escape_path_name(k.lower())}={escape_path_name(v)}" for (k, _), v in zip(keys, values, strict=True))


class EmbeddedMetastore:
    """The project's embedded metastore file (`.tablespec/metastore.db`); created on first write.
    `default`: the project names no catalog, and this is the one used by default."""

    def __init__(self, db: Path, origin: str, default: bool = False):
        self.db = db
        self.origin = origin
        self.default = default
        self.reads = 0   # batched reads made (one per database a plan looks at)

    def __repr__(self) -> str:
        return f"EmbeddedMetastore({self.db})"

    # reading

    def _reader(self) -> sqlite3.Connection | None:
        if not self.db.is_file():
            return None
        try:
            return sqlite3.connect(f"{file_uri(self.db)}?mode=ro", uri=True, timeout=30)
        except sqlite3.Error as e:
            raise CatalogError(f"{self.origin}: cannot open the embedded metastore {self.db}: {e}") from None

    def tables(self, database: str) -> dict[str, Registration]:
        """Every table of `database` as registered (one batched read); {} when there is none."""
        self.reads += 1
        conn = self._reader()
        if conn is None:
            return {}
        try:
            with conn:
                return self._tables(conn, database.lower()) if self._complete(conn) else {}
        except sqlite3.Error as e:
            raise CatalogError(f"{self.origin}: cannot read the embedded metastore {self.db}: {e}") from None
        finally:
            conn.close()

    @staticmethod
    def _tables(conn: sqlite3.Connection, database: str) -> dict[str, Registration]:
        rows = conn.execute(
            "SELECT t.TBL_ID, t.TBL_NAME, t.TBL_TYPE, s.LOCATION, s.INPUT_FORMAT, s.OUTPUT_FORMAT, s.CD_ID, "
            "s.SERDE_ID, se.SLIB FROM TBLS t JOIN DBS d ON t.DB_ID = d.DB_ID JOIN SDS s ON t.SD_ID = s.SD_ID "
            "LEFT JOIN SERDES se ON s.SERDE_ID = se.SERDE_ID WHERE d.NAME = ?", (database,)).fetchall()
        if not rows:
            return {}
        ids = [r[0] for r in rows]
        marks = ",".join("?" * len(ids))

        def grouped(sql: str, args: list) -> dict:
            out: dict = defaultdict(list)
            for key, *rest in conn.execute(sql, args):
                out[key].append(tuple(rest))
            return out
        params = grouped(f"SELECT TBL_ID, PARAM_KEY, PARAM_VALUE FROM TABLE_PARAMS WHERE TBL_ID IN ({marks})", ids)
        keys = grouped(f"SELECT TBL_ID, PKEY_NAME, PKEY_TYPE FROM PARTITION_KEYS WHERE TBL_ID IN ({marks}) "
                       "ORDER BY TBL_ID, INTEGER_IDX", ids)
        cds = [r[6] for r in rows]
        columns = grouped(f"SELECT CD_ID, COLUMN_NAME, TYPE_NAME FROM COLUMNS_V2 WHERE CD_ID IN ({','.join('?' * len(cds))}) "
                          "ORDER BY CD_ID, INTEGER_IDX", cds)
        serdes = [r[7] for r in rows]
        serde_params = grouped(f"SELECT SERDE_ID, PARAM_KEY, PARAM_VALUE FROM SERDE_PARAMS "
                               f"WHERE SERDE_ID IN ({','.join('?' * len(serdes))})", serdes)
        parts: dict = defaultdict(dict)
        for tbl, part, location, value in conn.execute(
                f"SELECT p.TBL_ID, p.PART_ID, s.LOCATION, v.PART_KEY_VAL FROM PARTITIONS p JOIN SDS s ON p.SD_ID = s.SD_ID "
                f"JOIN PARTITION_KEY_VALS v ON v.PART_ID = p.PART_ID WHERE p.TBL_ID IN ({marks}) "
                "ORDER BY p.PART_ID, v.INTEGER_IDX", ids):
            values, _ = parts[tbl].get(part, ((), location))
            parts[tbl][part] = ((*values, value), location)
        return {
            name: Registration(
                database, name, location or "", tuple(columns.get(cd, [])), tuple(keys.get(tbl, [])),
                dict(params.get(tbl, [])), dict(serde_params.get(serde, [])), input_format or "", output_format or "",
                slib or "", table_type or "", {values: loc for values, loc in parts.get(tbl, {}).values()})
            for tbl, name, table_type, location, input_format, output_format, cd, serde, slib in rows}

    def _complete(self, conn: sqlite3.Connection) -> bool:
        """Whether the file holds every table of the schema. One that lacks some (a first creation cut
        short by a kill before creation was one transaction, or an empty file) is incomplete, and is
        created again only while it holds no row at all: one with rows is refused, never dropped."""
        present = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if schema_tables() <= present:
            return True
        holding = sorted(t for t in present if conn.execute(f"SELECT 1 FROM {_quoted(t)} LIMIT 1").fetchone())
        if holding:
            raise CatalogError(f"{self.origin}: the embedded metastore {self.db} is damaged: it lacks "
                               f"{len(schema_tables() - present)} of the metastore's {len(schema_tables())} tables and "
                               f"holds rows ({', '.join(holding[:3])}{', ...' if len(holding) > 3 else ''}); tablespec "
                               "re-creates only an empty one: restore it from a copy or move it aside")
        return False

    # writing

    def _writer(self) -> sqlite3.Connection:
        """A connection to the file, its schema created first when missing or incomplete, in one
        transaction: a kill leaves no schema or all of it."""
        conn = None
        try:
            self.db.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.db, timeout=60, isolation_level=None)
            if not self._complete(conn):
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("BEGIN IMMEDIATE")
                if not self._complete(conn):   # again under the write lock: another process may have made it
                    self._create(conn)
                conn.execute("COMMIT")
            return conn
        except (OSError, sqlite3.Error, CatalogError) as e:
            if conn is not None:
                conn.close()
            if isinstance(e, CatalogError):
                raise
            raise CatalogError(f"{self.origin}: cannot write the embedded metastore {self.db}: {e}") from None

    @staticmethod
    def _create(conn: sqlite3.Connection) -> None:
        """The schema, inside the caller's transaction, over whatever empty part of it is there."""
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")\
                .fetchall():
            conn.execute(f"DROP TABLE {_quoted(name)}")
        statements = schema_statements()
        for i, statement in enumerate(statements):
            if i == len(statements) // 2:
                crash_point("metastore_schema")
            conn.execute(statement)

    def sync(self, change: CatalogDiff) -> None:
        """Make the catalog's table what `change.desired` says, in one transaction."""
        if change.in_sync:
            return
        conn = self._writer()
        try:
            conn.execute("BEGIN IMMEDIATE")
            _Writer(conn).apply(change)
            conn.execute("COMMIT")
        except sqlite3.Error as e:
            conn.execute("ROLLBACK") if conn.in_transaction else None
            raise CatalogError(f"{self.origin}: cannot write the embedded metastore {self.db}: {e}") from None
        finally:
            conn.close()


class _Writer:
    """The metastore's rows for one sync, inside the caller's transaction."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.now = int(time.time())

    def ids(self, model: str, count: int = 1) -> list[int]:
        """`count` new ids of a metastore model class, past every id DataNucleus may have reserved."""
        name = MODEL + model
        row = self.conn.execute("SELECT NEXT_VAL FROM SEQUENCE_TABLE WHERE SEQUENCE_NAME = ?", (name,)).fetchone()
        first = row[0] if row else 1
        if row:
            self.conn.execute("UPDATE SEQUENCE_TABLE SET NEXT_VAL = ? WHERE SEQUENCE_NAME = ?", (first + count, name))
        else:
            self.conn.execute("INSERT INTO SEQUENCE_TABLE VALUES (?, ?)", (name, first + count))
        return list(range(first, first + count))

    def database(self, name: str) -> int:
        row = self.conn.execute("SELECT DB_ID FROM DBS WHERE NAME = ?", (name,)).fetchone()
        if row:
            return row[0]
        (db_id,) = self.ids("MDatabase")
        self.conn.execute("INSERT INTO DBS (DB_ID, \"DESC\", DB_LOCATION_URI, NAME, OWNER_NAME, OWNER_TYPE) "
                          "VALUES (?, ?, ?, ?, ?, ?)", (db_id, "created by tablespec", "", name, getpass.getuser(), "USER"))
        return db_id

    def storage(self, reg: Registration, cd: int, location: str) -> int:
        (serde,) = self.ids("MSerDeInfo")
        self.conn.execute("INSERT INTO SERDES (SERDE_ID, NAME, SLIB) VALUES (?, NULL, ?)", (serde, reg.serde))
        self.conn.executemany("INSERT INTO SERDE_PARAMS (SERDE_ID, PARAM_KEY, PARAM_VALUE) VALUES (?, ?, ?)",
                              [(serde, k, v) for k, v in reg.serde_parameters.items()])
        (sd,) = self.ids("MStorageDescriptor")
        self.conn.execute("INSERT INTO SDS (SD_ID, CD_ID, INPUT_FORMAT, IS_COMPRESSED, IS_STOREDASSUBDIRECTORIES, "
                          "LOCATION, NUM_BUCKETS, OUTPUT_FORMAT, SERDE_ID) VALUES (?, ?, ?, 0, 0, ?, 0, ?, ?)",
                          (sd, cd, reg.input_format, location, reg.output_format, serde))
        return sd

    def columns(self, cd: int, columns) -> None:
        self.conn.execute("DELETE FROM COLUMNS_V2 WHERE CD_ID = ?", (cd,))
        self.conn.executemany("INSERT INTO COLUMNS_V2 (CD_ID, COMMENT, COLUMN_NAME, TYPE_NAME, INTEGER_IDX) "
                              "VALUES (?, '', ?, ?, ?)", [(cd, n, t, i) for i, (n, t) in enumerate(columns)])

    def table_id(self, reg: Registration) -> tuple[int, int, int] | None:
        return self.conn.execute(
            "SELECT t.TBL_ID, t.SD_ID, s.CD_ID FROM TBLS t JOIN DBS d ON t.DB_ID = d.DB_ID JOIN SDS s ON s.SD_ID = t.SD_ID "
            "WHERE d.NAME = ? AND t.TBL_NAME = ?", (reg.database.lower(), reg.table.lower())).fetchone()

    def register(self, reg: Registration) -> None:
        db = self.database(reg.database.lower())
        (cd,) = self.ids("MColumnDescriptor")
        self.conn.execute("INSERT INTO CDS (CD_ID) VALUES (?)", (cd,))
        self.columns(cd, reg.columns)
        sd = self.storage(reg, cd, reg.location)
        (tbl,) = self.ids("MTable")
        self.conn.execute("INSERT INTO TBLS (TBL_ID, CREATE_TIME, DB_ID, LAST_ACCESS_TIME, OWNER, RETENTION, "
                          "IS_REWRITE_ENABLED, SD_ID, TBL_NAME, TBL_TYPE) VALUES (?, ?, ?, 0, ?, 0, 0, ?, ?, ?)",
                          (tbl, self.now, db, getpass.getuser(), sd, reg.table.lower(), reg.table_type))
        self.parameters(tbl, reg.parameters, replace=True)
        self.conn.executemany("INSERT INTO PARTITION_KEYS (TBL_ID, PKEY_COMMENT, PKEY_NAME, PKEY_TYPE, INTEGER_IDX) "
                              "VALUES (?, '', ?, ?, ?)", [(tbl, n, t, i) for i, (n, t) in enumerate(reg.partition_keys)])
        self.add_partitions(reg, tbl, cd, sorted(reg.partitions))

    def parameters(self, tbl: int, params: dict[str, str], replace: bool = False) -> None:
        if replace:
            self.conn.execute("DELETE FROM TABLE_PARAMS WHERE TBL_ID = ?", (tbl,))
        else:   # the schema's parts are all replaced: a shorter schema leaves none of the old ones behind
            self.conn.execute("DELETE FROM TABLE_PARAMS WHERE TBL_ID = ? AND PARAM_KEY LIKE 'spark.sql.sources.schema.%'", (tbl,))
            self.conn.executemany("DELETE FROM TABLE_PARAMS WHERE TBL_ID = ? AND PARAM_KEY = ?", [(tbl, k) for k in params])
        rows = {**params, "transient_lastDdlTime": str(self.now)}
        self.conn.execute("DELETE FROM TABLE_PARAMS WHERE TBL_ID = ? AND PARAM_KEY = 'transient_lastDdlTime'", (tbl,))
        self.conn.executemany("INSERT INTO TABLE_PARAMS (TBL_ID, PARAM_KEY, PARAM_VALUE) VALUES (?, ?, ?)",
                              [(tbl, k, v) for k, v in rows.items()])

    def add_partitions(self, reg: Registration, tbl: int, cd: int, values: list[tuple[str, ...]]) -> None:
        for vals in values:
            sd = self.storage(reg, cd, reg.partitions[vals])
            (part,) = self.ids("MPartition")
            self.conn.execute("INSERT INTO PARTITIONS (PART_ID, CREATE_TIME, LAST_ACCESS_TIME, PART_NAME, SD_ID, TBL_ID) "
                              "VALUES (?, ?, 0, ?, ?, ?)", (part, self.now, partition_name(reg.partition_keys, vals), sd, tbl))
            self.conn.executemany("INSERT INTO PARTITION_KEY_VALS (PART_ID, PART_KEY_VAL, INTEGER_IDX) VALUES (?, ?, ?)",
                                  [(part, v, i) for i, v in enumerate(vals)])
            self.conn.execute("INSERT INTO PARTITION_PARAMS (PART_ID, PARAM_KEY, PARAM_VALUE) VALUES (?, ?, ?)",
                              (part, "transient_lastDdlTime", str(self.now)))

    def drop_storage(self, sd: int) -> None:
        (serde,) = self.conn.execute("SELECT SERDE_ID FROM SDS WHERE SD_ID = ?", (sd,)).fetchone()
        for table in ("SD_PARAMS", "BUCKETING_COLS", "SORT_COLS", "SKEWED_COL_NAMES", "SKEWED_COL_VALUE_LOC_MAP",
                      "SKEWED_VALUES"):
            self.conn.execute(f"DELETE FROM {table} WHERE SD_ID{'_OID' if table == 'SKEWED_VALUES' else ''} = ?", (sd,))
        self.conn.execute("DELETE FROM SDS WHERE SD_ID = ?", (sd,))
        self.conn.execute("DELETE FROM SERDE_PARAMS WHERE SERDE_ID = ?", (serde,))
        self.conn.execute("DELETE FROM SERDES WHERE SERDE_ID = ?", (serde,))

    def drop_partitions(self, tbl: int, values: Iterable[tuple[str, ...]]) -> None:
        wanted = set(values)
        found: dict = defaultdict(list)
        for part, sd, value in self.conn.execute(
                "SELECT p.PART_ID, p.SD_ID, v.PART_KEY_VAL FROM PARTITIONS p JOIN PARTITION_KEY_VALS v ON v.PART_ID = p.PART_ID "
                "WHERE p.TBL_ID = ? ORDER BY p.PART_ID, v.INTEGER_IDX", (tbl,)):
            found[(part, sd)].append(value)
        for (part, sd), vals in found.items():
            if tuple(vals) in wanted:
                for table in ("PARTITION_KEY_VALS", "PARTITION_PARAMS", "PART_PRIVS", "PART_COL_PRIVS"):
                    self.conn.execute(f"DELETE FROM {table} WHERE PART_ID = ?", (part,))
                self.conn.execute("DELETE FROM PART_COL_STATS WHERE PART_ID = ?", (part,))
                self.conn.execute("DELETE FROM PARTITIONS WHERE PART_ID = ?", (part,))
                self.drop_storage(sd)

    def drop_table(self, reg: Registration) -> None:
        found = self.table_id(reg)
        if found is None:
            return
        tbl, sd, cd = found
        parts = [tuple(v) for v in self._partition_values(tbl)]
        self.drop_partitions(tbl, parts)
        for table in ("TABLE_PARAMS", "PARTITION_KEYS", "TBL_PRIVS", "TBL_COL_PRIVS", "TAB_COL_STATS"):
            self.conn.execute(f"DELETE FROM {table} WHERE TBL_ID = ?", (tbl,))
        self.conn.execute("DELETE FROM TBLS WHERE TBL_ID = ?", (tbl,))
        self.drop_storage(sd)
        if not self.conn.execute("SELECT 1 FROM SDS WHERE CD_ID = ?", (cd,)).fetchone():
            self.conn.execute("DELETE FROM COLUMNS_V2 WHERE CD_ID = ?", (cd,))
            self.conn.execute("DELETE FROM CDS WHERE CD_ID = ?", (cd,))

    def _partition_values(self, tbl: int) -> list[list[str]]:
        out: dict = defaultdict(list)
        for part, value in self.conn.execute(
                "SELECT p.PART_ID, v.PART_KEY_VAL FROM PARTITIONS p JOIN PARTITION_KEY_VALS v ON v.PART_ID = p.PART_ID "
                "WHERE p.TBL_ID = ? ORDER BY p.PART_ID, v.INTEGER_IDX", (tbl,)):
            out[part].append(value)
        return list(out.values())

    def apply(self, change: CatalogDiff) -> None:
        reg = change.desired
        if change.replace:
            self.drop_table(reg)
        if change.register or change.replace:
            self.register(reg)
            return
        found = self.table_id(reg)
        if found is None:   # dropped since it was observed: register it whole
            self.register(reg)
            return
        tbl, sd, cd = found
        if change.columns:
            self.columns(cd, reg.columns)
        if change.location or change.storage:
            serde = self.conn.execute("SELECT SERDE_ID FROM SDS WHERE SD_ID = ?", (sd,)).fetchone()[0]
            self.conn.execute("UPDATE SDS SET LOCATION = ?, INPUT_FORMAT = ?, OUTPUT_FORMAT = ? WHERE SD_ID = ?",
                              (reg.location, reg.input_format, reg.output_format, sd))
            self.conn.execute("UPDATE SERDES SET SLIB = ? WHERE SERDE_ID = ?", (reg.serde, serde))
            self.conn.execute("DELETE FROM SERDE_PARAMS WHERE SERDE_ID = ?", (serde,))
            self.conn.executemany("INSERT INTO SERDE_PARAMS (SERDE_ID, PARAM_KEY, PARAM_VALUE) VALUES (?, ?, ?)",
                                  [(serde, k, v) for k, v in reg.serde_parameters.items()])
            self.conn.execute("UPDATE TBLS SET TBL_TYPE = ? WHERE TBL_ID = ?", (reg.table_type, tbl))
        if change.properties or change.columns or change.location or change.storage:
            self.parameters(tbl, {k: v for k, v in reg.parameters.items()})
        if change.drop_partitions:
            self.drop_partitions(tbl, change.drop_partitions)
        if change.add_partitions:
            self.add_partitions(reg, tbl, cd, list(change.add_partitions))
