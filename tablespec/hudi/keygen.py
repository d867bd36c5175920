"""Hudi's key generators: which ones tablespec speaks, and their timestamp partitioning settings.

A table's key generator (`hoodie.table.keygenerator.class`) fixes how a row's record key and
partition path are built, so a table whose generator tablespec cannot reproduce must be refused,
never guessed. Timestamp partitioning (TimestampBasedKeyGenerator, and CustomKeyGenerator's
`field:TIMESTAMP`) formats one time value with a Joda-Time pattern; `hoodie.keygen.timebased.*`
holds its settings. Apache Hudi 0.15 persists in hoodie.properties only the ones its writer was
given, and only for TimestampBasedKeyGenerator (never the timestamp type); for CustomKeyGenerator
it persists none, not even the field types. What a table lacks is found from its stored rows
(tablespec/stored_paths.py), or asked for.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tablespec.errors import UnsupportedTableError
from tablespec.hudi import keys

PACKAGE = "org.apache.hudi.keygen."
# KeyGenUtils: what a record key holds for a null or an empty key field value
NULL_PLACEHOLDER = "__null__"
EMPTY_PLACEHOLDER = "__empty__"
SIMPLE = PACKAGE + "SimpleKeyGenerator"
COMPLEX = PACKAGE + "ComplexKeyGenerator"
NONPARTITIONED = PACKAGE + "NonpartitionedKeyGenerator"
TIMESTAMP_BASED = PACKAGE + "TimestampBasedKeyGenerator"
CUSTOM = PACKAGE + "CustomKeyGenerator"

# Hudi's Avro-path twins build the same keys and paths (Flink and Java writers record them).
_AVRO_TWINS = {PACKAGE + n.replace("KeyGenerator", "AvroKeyGenerator"): PACKAGE + n
               for n in ("SimpleKeyGenerator", "ComplexKeyGenerator", "NonpartitionedKeyGenerator",
                         "TimestampBasedKeyGenerator", "CustomKeyGenerator")}
EXPRESSED = (SIMPLE, COMPLEX, NONPARTITIONED, TIMESTAMP_BASED, CUSTOM)
# Generators Hudi ships that a table may record, and why tablespec cannot manage such a table.
REFUSED = {
    PACKAGE + "GlobalDeleteKeyGenerator": "it builds an empty partition path for deletes only",
    PACKAGE + "GlobalAvroDeleteKeyGenerator": "it builds an empty partition path for deletes only",
    "org.apache.spark.sql.hudi.command.SqlKeyGenerator":
        "it wraps the writer's own generator, which hoodie.properties does not name",
    "org.apache.spark.sql.hudi.command.UuidKeyGenerator": "its keys are random UUIDs tablespec cannot reproduce",
    PACKAGE + "AutoRecordGenWrapperKeyGenerator": "it wraps the writer's own generator, which hoodie.properties does not name",
    PACKAGE + "AutoRecordGenWrapperAvroKeyGenerator":
        "it wraps the writer's own generator, which hoodie.properties does not name",
}

# Hudi 1.x records the generator as a type (hoodie.table.keygenerator.type), also in version-6
# tables; the type names the class as Hudi's KeyGeneratorType does (USER_PROVIDED: the class key).
_SQL = "org.apache.spark.sql.hudi.command."
TYPES = {
    "SIMPLE": SIMPLE, "SIMPLE_AVRO": PACKAGE + "SimpleAvroKeyGenerator",
    "COMPLEX": COMPLEX, "COMPLEX_AVRO": PACKAGE + "ComplexAvroKeyGenerator",
    "TIMESTAMP": TIMESTAMP_BASED, "TIMESTAMP_AVRO": PACKAGE + "TimestampBasedAvroKeyGenerator",
    "CUSTOM": CUSTOM, "CUSTOM_AVRO": PACKAGE + "CustomAvroKeyGenerator",
    "NON_PARTITION": NONPARTITIONED, "NON_PARTITION_AVRO": PACKAGE + "NonpartitionedAvroKeyGenerator",
    "GLOBAL_DELETE": PACKAGE + "GlobalDeleteKeyGenerator", "GLOBAL_DELETE_AVRO": PACKAGE + "GlobalAvroDeleteKeyGenerator",
    "AUTO_RECORD": PACKAGE + "AutoRecordGenWrapperKeyGenerator",
    "AUTO_RECORD_AVRO": PACKAGE + "AutoRecordGenWrapperAvroKeyGenerator",
    "SPARK_SQL": _SQL + "SqlKeyGenerator", "SPARK_SQL_UUID": _SQL + "UuidKeyGenerator",
    "SPARK_SQL_MERGE_INTO": _SQL + "MergeIntoKeyGenerator",
    "HOODIE_TABLE_METADATA": "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator",
}
_TYPE_OF = {c: t for t, c in TYPES.items()}
USER_PROVIDED = "USER_PROVIDED"


def class_of_type(key: str, raw: str) -> str | None:
    """The generator class a recorded hoodie.table.keygenerator.type names (None: USER_PROVIDED,
    the class key names it)."""
    name = raw.strip().upper()
    if name == USER_PROVIDED:
        return None
    if name not in TYPES:
        raise UnsupportedTableError(f"{key}={raw} names no key generator type tablespec knows")
    return TYPES[name]


def type_of_class(name: str) -> str:
    """The keygenerator.type of a generator class, as Hudi 1.x records it."""
    return _TYPE_OF.get(name.strip(), USER_PROVIDED)


PREFIX = keys.TIMEBASED_PREFIX
TYPE_KEY = keys.TIMESTAMP_TYPE.name
UNIT_KEY = keys.TIMESTAMP_UNIT.name
INPUT_FORMAT_KEY = keys.TIMESTAMP_INPUT_FORMAT.name
INPUT_DELIMITER_KEY = keys.TIMESTAMP_INPUT_DELIMITER.name
OUTPUT_FORMAT_KEY = keys.TIMESTAMP_OUTPUT_FORMAT.name
TIMEZONE_KEY = keys.TIMESTAMP_TIMEZONE.name
INPUT_TIMEZONE_KEY = keys.TIMESTAMP_INPUT_TIMEZONE.name
OUTPUT_TIMEZONE_KEY = keys.TIMESTAMP_OUTPUT_TIMEZONE.name
# CustomKeyGenerator's typed field list (`region:SIMPLE,ts:TIMESTAMP`), kept under the writer option
# Hudi reads it from: Hudi 0.15 records only the bare names in hoodie.table.partition.fields.
CUSTOM_FIELDS_KEY = keys.WRITE_PARTITION_FIELDS.name
# The documented default of hoodie.keygen.timebased.timezone. Hudi 0.15's generators do not apply
# it: with no zone set they format in the writer JVM's default zone (tested), so a table that records
# none is read as UTC only where its stored rows agree.
DEFAULT_TIME_ZONE = "UTC"

# Column types a number of a unit is read from: Hudi truncates floating values to a long; a string
# column holds the number's digits (what Hudi 1.x's Spark SQL UPDATE writes back into such a field).
_NUMBERS = ("int", "long", "float", "double", "string")
# The spec's input kinds: (Hudi timestamp type, scalar unit, column types it reads).
INPUTS: dict[str, tuple[str, str | None, tuple[str, ...]]] = {
    "epochSeconds": ("UNIX_TIMESTAMP", None, _NUMBERS),
    "epochMillis": ("EPOCHMILLISECONDS", None, _NUMBERS),
    "epochMicros": ("SCALAR", "MICROSECONDS", _NUMBERS),
    "scalar": ("SCALAR", None, _NUMBERS),                        # the unit is the spec's (Hudi's default: SECONDS)
    "timestamp": ("SCALAR", "MICROSECONDS", ("timestamp",)),   # Avro timestamp-micros: a long of microseconds
    "date": ("SCALAR", "DAYS", ("date",)),                       # Avro date: epoch days
    "dateString": ("DATE_STRING", None, ("string",)),
    "mixed": ("MIXED", None, ("string",)),                       # strings read as DATE_STRING; Hudi fails on numbers
}
STRING_INPUTS = ("dateString", "mixed")
UNIT_MICROS = {"NANOSECONDS": 0.001, "MICROSECONDS": 1, "MILLISECONDS": 1000, "SECONDS": 1_000_000,
               "MINUTES": 60_000_000, "HOURS": 3_600_000_000, "DAYS": 86_400_000_000}
DEFAULT_SCALAR_UNIT = "SECONDS"
TYPE_UNITS = {"UNIX_TIMESTAMP": "SECONDS", "EPOCHMILLISECONDS": "MILLISECONDS"}
# Hudi's EPOCHMICROSECONDS reads a number as SCALAR MICROSECONDS does: a table recording it is described as that.
SAME_TYPE = {"EPOCHMICROSECONDS": ("SCALAR", "MICROSECONDS")}
DEFAULT_INPUT_DELIMITER = ","


def observed_type(props: Mapping[str, str]) -> str | None:
    """A table's timestamp type, EPOCHMICROSECONDS read as the SCALAR it equals."""
    raw = props.get(TYPE_KEY)
    return SAME_TYPE[raw][0] if raw in SAME_TYPE else raw


def observed_unit(props: Mapping[str, str]) -> str | None:
    raw = props.get(TYPE_KEY)
    return SAME_TYPE[raw][1] if raw in SAME_TYPE else props.get(UNIT_KEY)


def canonical_class(name: str | None) -> str | None:
    """The Spark generator a recorded class builds keys like (Avro twins map to theirs)."""
    if name is None:
        return None
    name = name.strip()
    return _AVRO_TWINS.get(name, name)


def refusal(name: str | None) -> str | None:
    """Why a table with this key generator cannot be managed, or None when tablespec expresses it."""
    cls = canonical_class(name)
    if cls is None or cls in EXPRESSED:
        return None
    why = REFUSED.get(cls, "it is not one of Hudi's generators tablespec reproduces "
                           f"({', '.join(c.rsplit('.', 1)[1] for c in EXPRESSED)})")
    return f"key generator {name} is not supported: {why}"


def input_formats(pattern: str, delimiter: str | None) -> list[str]:
    """The input patterns Hudi tries, in order: `pattern` split at the delimiter regex (`,` by default), trimmed."""
    sep = (delimiter or "").strip() or DEFAULT_INPUT_DELIMITER
    parts = re.split(sep, pattern)
    while parts and parts[-1] == "":   # Java's String.split drops trailing empty strings
        parts.pop()
    return [p.strip() for p in parts]


@dataclass(frozen=True)
class TimestampPartitioning:
    """How one partition field's time value becomes its path segment (plain data: pickled to executors).

    Zones as Hudi reads them: `time_zone` (hoodie.keygen.timebased.timezone) is both the input and the
    output zone; without it `input_time_zone` reads strings that name no zone, `output_time_zone`
    prints; a zone nobody names is the writer JVM's, which tablespec takes as UTC."""

    field: str
    input: str                 # a key of INPUTS
    output_format: str         # Joda-Time pattern, e.g. yyyy/MM/dd
    time_zone: str | None = DEFAULT_TIME_ZONE
    input_format: str | None = None   # dateString and mixed only: one pattern, or several split at the delimiter
    unit: str | None = None           # scalar only (None: Hudi's default, SECONDS)
    input_time_zone: str | None = None
    output_time_zone: str | None = None
    input_delimiter: str | None = None  # regex between input patterns (Hudi's default: a comma)

    @property
    def hudi_type(self) -> str:
        return INPUTS[self.input][0]

    @property
    def number_unit(self) -> str | None:
        """The unit of a numeric input (SECONDS, MILLISECONDS, MICROSECONDS, DAYS, ...); None for strings."""
        if self.input in STRING_INPUTS:
            return None
        if self.input == "scalar":
            return self.unit or DEFAULT_SCALAR_UNIT
        return INPUTS[self.input][1] or TYPE_UNITS.get(self.hudi_type)

    @property
    def input_patterns(self) -> list[str]:
        return input_formats(self.input_format or "", self.input_delimiter)

    @property
    def reading_zone(self) -> str | None:
        """The zone strings without one are read in (None: the writer JVM's)."""
        return self.time_zone or self.input_time_zone

    @property
    def printing_zone(self) -> str | None:
        """The zone folders are printed in (None: a parsed string's own zone, else the writer JVM's)."""
        return self.time_zone or self.output_time_zone

    def properties(self) -> dict[str, str]:
        """The `hoodie.keygen.timebased.*` settings, as Hudi writers read them."""
        props = {TYPE_KEY: self.hudi_type, OUTPUT_FORMAT_KEY: self.output_format}
        for key, value in ((TIMEZONE_KEY, self.time_zone), (INPUT_TIMEZONE_KEY, self.input_time_zone),
                           (OUTPUT_TIMEZONE_KEY, self.output_time_zone), (INPUT_FORMAT_KEY, self.input_format),
                           (INPUT_DELIMITER_KEY, self.input_delimiter)):
            if value:
                props[key] = value
        if self.hudi_type == "SCALAR":
            props[UNIT_KEY] = self.number_unit or DEFAULT_SCALAR_UNIT
        return props


def key_generator_class(record_key_fields: list[str], partition_fields: list[str],
                        timestamp_field: str | None) -> str:
    """The generator for a record key and partitioning: the one Hudi picks for such a layout."""
    if timestamp_field is not None:
        if partition_fields == [timestamp_field] and len(record_key_fields) <= 1:
            return TIMESTAMP_BASED   # a simple key and one time-formatted partition field
        return CUSTOM
    if len(record_key_fields) > 1 or len(partition_fields) > 1:
        return COMPLEX
    return NONPARTITIONED if not partition_fields else SIMPLE


def complex_record_key(key_generator: str, record_key_fields: list[str], partition_fields: list[str]) -> bool:
    """Whether keys are `f1:v1,f2:v2` (ComplexKeyGenerator; CustomKeyGenerator with several key fields)."""
    cls = canonical_class(key_generator)
    if cls in (CUSTOM, TIMESTAMP_BASED):
        return len(record_key_fields) > 1
    return len(record_key_fields) > 1 or len(partition_fields) > 1


def custom_fields(partition_fields: list[str], timestamp_field: str | None) -> str:
    """CustomKeyGenerator's typed field list."""
    return ",".join(f"{f}:{'TIMESTAMP' if f == timestamp_field else 'SIMPLE'}" for f in partition_fields)


def timestamp_field_of(props: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(the time-formatted partition field, or None; why it cannot be known, or None) of a table."""
    cls = canonical_class(props.get(keys.KEY_GENERATOR_CLASS.name))
    fields = [f.split(":", 1)[0].strip() for f in (props.get(keys.PARTITION_FIELDS.name) or "").split(",") if f.strip()]
    if cls == TIMESTAMP_BASED:
        return (fields[0] if fields else None), None
    if cls != CUSTOM:
        return None, None
    typed = props.get(CUSTOM_FIELDS_KEY) or (props.get(keys.PARTITION_FIELDS.name) if ":" in
                                            (props.get(keys.PARTITION_FIELDS.name) or "") else None)
    if not typed:
        return None, (f"{keys.PROPERTIES_FILE} names the partition fields ({', '.join(fields)}) but not their "
                      f"CustomKeyGenerator types; record them as {CUSTOM_FIELDS_KEY}="
                      f"{','.join(f + ':SIMPLE|TIMESTAMP' for f in fields)}")
    stamped = [f.split(":", 1)[0].strip() for f in typed.split(",") if f.strip().upper().endswith(":TIMESTAMP")]
    if len(stamped) > 1:
        return None, f"{len(stamped)} TIMESTAMP partition fields ({', '.join(stamped)}); tablespec supports one"
    return (stamped[0] if stamped else None), None
