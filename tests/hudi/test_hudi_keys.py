"""The key registry (tablespec/hudi/keys.py): the only place the package spells a `hoodie.*` key, and
its rules: aliases resolve, Hudi's accepted values are enforced with a clear message, and the spec
mapping, the table config and `hudi-options` use only keys it declares."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from _support import ORDERS_SPEC

import tablespec
from tablespec.errors import HudiFormatError
from tablespec.hudi import keys
from tablespec.hudi.config import DEFAULT_INDEX_TYPE, KNOWN_KEYS, TableConfig, read_table_config
from tablespec.hudi.formats.properties import format_properties, table_checksum
from tablespec.hudi.io import LocalStorage
from tablespec.hudi.table import HudiTable
from tablespec.hudi_options import RENAMED, hudi_write_options
from tablespec.plan.settings import REGISTRY
from tablespec.spec.loader import load_spec_text

PACKAGE = Path(tablespec.__file__).parent
REGISTRY_MODULE = PACKAGE / "hudi" / "keys.py"


def _key_literals(path: Path) -> list[str]:
    """`line: text` of every string in `path` that spells a hoodie.* key (the file name
    hoodie.properties aside); docstrings and other bare string statements are prose, not code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return [f"{n.lineno}: {n.value!r}" for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in prose
            and keys.HUDI_PREFIX in n.value.replace(keys.PROPERTIES_FILE, "")]


def test_no_hoodie_key_literal_outside_the_registry():
    found = [f"{path.relative_to(PACKAGE.parent)}:{hit}" for path in sorted(PACKAGE.rglob("*.py"))
             if path != REGISTRY_MODULE for hit in _key_literals(path)]
    assert not found, "name these keys through tablespec/hudi/keys.py:\n" + "\n".join(found)


def test_the_scan_finds_key_literals_and_skips_prose(tmp_path):
    """The guard above can fail: a key in code (also inside an f-string) is found, docstrings and
    hoodie.properties are not."""
    sample = tmp_path / "sample.py"
    sample.write_text('"""hoodie.table.name in a docstring."""\nA = "hoodie.table.name"\n'
                      'B = f"{A}: see hoodie.properties"\nC = f"hoodie.index.type={A}"\n')
    assert sorted(h.split(":")[0] for h in _key_literals(sample)) == ["2", "4"]


def test_names_and_aliases_are_unique_and_resolve():
    names = [k.name for k in keys.ALL]
    aliases = [a.name for k in keys.ALL for a in k.aliases]
    assert len(set(names)) == len(names) and not set(aliases) & set(names)
    assert keys.get("hoodie.table.ordering.fields") is keys.PRECOMBINE_FIELD
    assert keys.get("hoodie.table.keygenerator.type") is keys.KEY_GENERATOR_CLASS
    assert keys.get(keys.BUCKET_NUM.name) is keys.BUCKET_NUM and keys.get("hoodie.no.such.key") is None
    assert all(k.name.startswith(keys.HUDI_PREFIX) == (k.scope != "tablespec") for k in keys.ALL)


def test_an_alias_reads_as_its_key():
    """A Hudi 1.x spelling fills the known key (the registry says which spellings exist)."""
    config = TableConfig.from_properties({keys.TABLE_NAME.name: "t", keys.ORDERING_FIELDS.name: "ts",
                                          keys.KEY_GENERATOR_TYPE.name: "COMPLEX"})
    assert config.precombine_field == "ts"
    assert config.key_generator_class == "org.apache.hudi.keygen.ComplexKeyGenerator"


def test_writer_spellings_name_table_keys_and_their_spec_paths():
    spellings = keys.writer_spellings()
    assert spellings["hoodie.datasource.write.recordkey.field"] is keys.RECORD_KEY_FIELDS
    assert spellings["hoodie.datasource.write.partitionpath.field"] is keys.PARTITION_FIELDS
    assert RENAMED["hoodie.datasource.write.precombine.field"] == "spec.orderingField"
    assert RENAMED["hoodie.datasource.write.keygenerator.class"] == "keyGenerator"


@pytest.mark.parametrize(("key", "raw", "value"), [
    (keys.TABLE_TYPE, " copy_on_write ", "COPY_ON_WRITE"),
    (keys.LAYOUT_OPTIMIZE_STRATEGY, "Z-ORDER", "z-order"),
    (keys.BUCKET_NUM, "16", "16"),
    (keys.TIMESTAMP_OUTPUT_FORMAT, "yyyy/MM/dd", "yyyy/MM/dd"),
])
def test_accepted_values_read_as_hudi_spells_them(key, raw, value):
    assert key.check(raw) == value


@pytest.mark.parametrize(("key", "raw", "message"), [
    (keys.TABLE_TYPE, "MERGE_ON_WRITE",
     "hoodie.table.type=MERGE_ON_WRITE: Apache Hudi accepts one of COPY_ON_WRITE, MERGE_ON_READ"),
    (keys.BUCKET_ENGINE, "RANDOM", "hoodie.index.bucket.engine=RANDOM: Apache Hudi accepts one of SIMPLE, CONSISTENT_HASHING"),
    (keys.BUCKET_NUM, "0", "hoodie.bucket.index.num.buckets=0: expected an integer of at least 1"),
    (keys.KEEP_COMMITS, "ten", "hoodie.cleaner.commits.retained: expected an integer, found 'ten'"),
])
def test_values_hudi_refuses_are_refused_by_name(key, raw, message):
    with pytest.raises(HudiFormatError) as e:
        key.check(raw)
    assert str(e.value) == message


def test_number_reads_the_value_or_hudis_default():
    assert keys.KEEP_COMMITS.number({}) == 10
    assert keys.KEEP_COMMITS.number({keys.KEEP_COMMITS.name: " 3 "}) == 3
    with pytest.raises(HudiFormatError, match="hoodie.cleaner.commits.retained: expected an integer, found 'x'"):
        keys.KEEP_COMMITS.number({keys.KEEP_COMMITS.name: "x"})


def test_a_table_type_hudi_does_not_know_is_refused_naming_the_file(tmp_path):
    """Reading hoodie.properties applies the registry's rule; the error names the file and the key."""
    props = {keys.TABLE_NAME.name: "t", keys.TABLE_TYPE.name: "COPY_ON_READ", keys.TABLE_VERSION.name: "6",
             keys.CHECKSUM.name: str(table_checksum("t", None))}
    meta = tmp_path / ".hoodie"
    meta.mkdir()
    (meta / keys.PROPERTIES_FILE).write_text(format_properties(props, ("test",), dated=False), encoding="latin-1")
    with pytest.raises(HudiFormatError) as e:
        read_table_config(LocalStorage(), str(tmp_path))
    assert str(e.value) == (f"{meta / keys.PROPERTIES_FILE}: hoodie.table.type=COPY_ON_READ: Apache Hudi accepts "
                            "one of COPY_ON_WRITE, MERGE_ON_READ")


def test_the_table_config_and_the_spec_mapping_use_registry_keys():
    """Every key the table config parses and every setting the spec maps is declared, with the same spec path."""
    assert all(k.key in keys.BY_NAME for k in KNOWN_KEYS) and DEFAULT_INDEX_TYPE == keys.INDEX_TYPE.default
    for setting in REGISTRY:
        assert setting.prop in keys.BY_NAME, setting.prop
        assert keys.BY_NAME[setting.prop].spec == setting.path, setting.prop


@pytest.mark.parametrize("index", ["{type: SIMPLE}", "{type: BUCKET, numBuckets: 8}", "{type: RECORD_LEVEL}"])
def test_hudi_options_are_registry_keys(index):
    spec = load_spec_text(ORDERS_SPEC.replace("{type: BUCKET, numBuckets: 16}", index), "t.yaml").specs[0].spec
    options = hudi_write_options(spec, HudiTable.open("/wh/sales/orders"))
    assert set(options) - {"path"} <= set(keys.BY_NAME)
    assert not any(keys.BY_NAME[k].scope == "tablespec" for k in options if k != "path")
