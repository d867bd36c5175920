"""Apache Hudi 1.1+'s partition-level bucket index (RFC-89) on table versions 8 and 9.

Hudi keeps a table's per-partition bucket counts in hashing configs, JSON files
`.hoodie/.bucket_index/partition_bucket_index_meta/configs/<instant>.hashing_config`; the folder's
existence makes its writers use them (over any writer option), and they load the latest one whose
instant is not a pending replacecommit (a bucket rescale writes its config before it commits). A
config holds `expressions` (`regex,count;regex,count`: the first regex *found* in the partition path
wins), `defaultBucketNumber` and `rule` ("regex").

tablespec's layout is `hoodie.bucket.index.num.buckets` plus `index.partitionBuckets` rules whose
patterns match the *whole* path. On these versions the hashing config is where the layout lives:
reading a table overlays it on hoodie.properties (`overlay`), and changing the layout writes a new
config (`record`), so Hudi 1.2 writers and tablespec route every key to the same file group.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tablespec.errors import HudiFormatError
from tablespec.hudi import keys
from tablespec.hudi.config import META_FOLDER, TableConfig, timeline_folder, timeline_layout
from tablespec.hudi.io import Storage, join
from tablespec.hudi.timeline.active import parse_instants
from tablespec.hudi.timeline.instant import REPLACE_COMMIT, Instant, new_instant_time

CONFIGS_FOLDER = f"{META_FOLDER}/.bucket_index/partition_bucket_index_meta/configs"
SUFFIX = ".hashing_config"
RULE = "regex"            # hoodie.bucket.index.partition.rule.type: the only rule Hudi has
CONFIG_VERSION = 1        # PartitionBucketIndexHashingConfig's format version
FIRST_VERSION = 8         # the table versions whose writers (Hudi 1.1+) read hashing configs
EXPRESSIONS_KEY = keys.BUCKET_PARTITION_EXPRESSIONS.name
RULE_KEY = keys.BUCKET_PARTITION_RULE.name
_WHOLE = re.compile(r"\^\(\?:(.*)\)\$", re.DOTALL)   # how tablespec anchors a pattern for Hudi's find()
_CATCH_ALL = "^(?:.*)$"                               # Hudi needs one rule: the default's, for no rules

Rules = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class HashingConfig:
    expressions: str
    default_bucket_number: int
    instant: str
    rule: str = RULE
    version: int = CONFIG_VERSION

    def to_json(self) -> bytes:
        """As Hudi's writer lays it out (Jackson's pretty printer, its field order)."""
        fields = {"expressions": self.expressions, "defaultBucketNumber": self.default_bucket_number,
                  "rule": self.rule, "version": self.version, "instant": self.instant}
        body = ",\n".join(f"  {json.dumps(k)} : {json.dumps(v)}" for k, v in fields.items())
        return ("{\n" + body + "\n}").encode("utf-8")

    @classmethod
    def parse(cls, data: bytes, where: str) -> HashingConfig:
        try:
            doc = json.loads(data.decode("utf-8"))
            return cls(str(doc["expressions"]), int(doc["defaultBucketNumber"]), str(doc["instant"]),
                       str(doc.get("rule") or RULE), int(doc.get("version") or CONFIG_VERSION))
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
            raise HudiFormatError(f"{where}: not a Hudi hashing config ({e})") from None

    @property
    def rules(self) -> Rules:
        return rules_of(self.expressions, self.default_bucket_number, self.rule)


def unexpressible(pattern: str) -> str | None:
    """Why a partitionBuckets pattern cannot be a Hudi expression (None: it can)."""
    if "," in pattern or ";" in pattern:
        return (f"pattern {pattern!r} holds ',' or ';', which Hudi's partition bucket expressions use as "
                "separators; write the pattern without them (e.g. a character class)")
    return None


def expressions_of(rules: Rules, default: int) -> str:
    """tablespec's rules as Hudi's expressions: each pattern anchored (Hudi finds, tablespec matches
    the whole path); no rules is one catch-all rule at the default count."""
    for pattern, _ in rules:
        if (why := unexpressible(pattern)) is not None:
            raise HudiFormatError(why)
    return ";".join(f"^(?:{p})$,{n}" for p, n in rules) or f"{_CATCH_ALL},{default}"


def _whole_match_pattern(regex: str) -> str:
    """A pattern matching the whole path where Hudi finds `regex` in it: tablespec's own anchoring
    read back, else `regex` anywhere in the path."""
    if (m := _WHOLE.fullmatch(regex)) is not None:
        try:
            re.compile(m.group(1))
            return m.group(1)
        except re.error:
            pass
    return f".*(?:{regex}).*"


def rules_of(expressions: str, default: int, rule: str = RULE) -> Rules:
    """Hudi's expressions as tablespec's rules (the inverse of `expressions_of`); a last catch-all
    rule at the default count is no rule."""
    if rule.lower() != RULE:
        raise HudiFormatError(f"hashing config rule {rule!r}: tablespec reads regex rules only")
    out = []
    for part in expressions.split(";"):
        regex, sep, count = part.strip().rpartition(",")
        if not sep or not count.strip().lstrip("-").isdigit():
            raise HudiFormatError(f"partition bucket expression {part!r}: expected 'regex,bucketNumber'")
        out.append((_whole_match_pattern(regex.strip()), int(count)))
    if out and out[-1] in (("(?:.*)", default), (".*", default), (".*(?:.*).*", default)):
        out.pop()
    return tuple(out)


def rules_json(rules: Rules) -> str | None:
    """The rules as hoodie.properties holds them (tablespec.bucket.partition.buckets), None for none."""
    return json.dumps([{"pattern": p, "numBuckets": n} for p, n in rules], separators=(",", ":")) if rules else None


def _configs(storage: Storage, base: str) -> list[str]:
    """The hashing configs' instants, oldest first (empty: the table has no partition-level index)."""
    return sorted(f.name[:-len(SUFFIX)] for f in storage.list_dir(join(base, CONFIGS_FOLDER))
                  if not f.is_dir and f.name.endswith(SUFFIX) and not f.name.startswith("."))


# The timeline's instants, asked for only when the table has hashing configs (a handle passes its own
# timeline; without one, the timeline folder is listed).
TimelineInstants = Callable[[], Iterable[Instant]]


def latest(storage: Storage, base: str, config: TableConfig,
           timeline: TimelineInstants | None = None) -> HashingConfig | None:
    """The hashing config Hudi's writers load: the latest one not made by a pending replacecommit."""
    instants = _configs(storage, base)
    if not instants:
        return None
    listed = timeline() if timeline is not None else _timeline_instants(storage, base, config)
    replaces = [i for i in listed if i.action == REPLACE_COMMIT]
    pending = {i.timestamp for i in replaces} - {i.timestamp for i in replaces if i.is_completed}
    committed = [i for i in instants if i not in pending]
    if not committed:
        return None
    path = join(base, CONFIGS_FOLDER, committed[-1] + SUFFIX)
    return HashingConfig.parse(storage.read_bytes(path), path)


def overlay(storage: Storage, base: str, config: TableConfig, timeline: TimelineInstants | None = None) -> TableConfig:
    """hoodie.properties with the bucket layout of the table's hashing config (versions 8 and 9):
    what Hudi's writers use, whatever hoodie.properties says (a table Hudi created names no index)."""
    managed_as = config.extra.get(keys.TABLESPEC_INDEX_TYPE.name, "BUCKET").upper()
    if (config.version < FIRST_VERSION or managed_as != "BUCKET"
            or (hashing := latest(storage, base, config, timeline)) is None):
        return config   # (a table tablespec moved off BUCKET keeps Hudi's configs, unused by its writers)
    extra = {k: v for k, v in config.extra.items() if k != keys.PARTITION_BUCKETS.name}
    if (rules := rules_json(hashing.rules)) is not None:
        extra[keys.PARTITION_BUCKETS.name] = rules
    return config.with_updates(index_type="BUCKET", bucket_num=hashing.default_bucket_number, extra=extra)


def record(storage: Storage, base: str, current: TableConfig, new: TableConfig, rules: Rules) -> HashingConfig | None:
    """Before `new` replaces `current` in hoodie.properties of a version 8/9 BUCKET table: a new
    hashing config when the layout (`new`'s bucket count and `rules`) differs from the one Hudi loads.
    A table without hashing configs gets its first only when it has rules (the plain bucket index
    needs none). Returns the config written, or None."""
    if new.version < FIRST_VERSION or (new.index_type or "").upper() != "BUCKET" or new.bucket_num is None:
        return None
    hashing = latest(storage, base, current)
    if hashing is None and not rules:
        return None
    if hashing is not None and (hashing.default_bucket_number, hashing.rules) == (new.bucket_num, rules):
        return None
    after = max([*_configs(storage, base), *(i.timestamp for i in _timeline_instants(storage, base, current))],
                default=None)
    return save(storage, base, new.bucket_num, rules, new_instant_time(after))


def kept(storage: Storage, base: str, config: TableConfig, rules: Rules) -> bool:
    """Whether the table keeps its layout in hashing configs: version 8/9 with rules or configs already."""
    return config.version >= FIRST_VERSION and (bool(rules) or bool(_configs(storage, base)))


def save(storage: Storage, base: str, num_buckets: int, rules: Rules, instant: str) -> HashingConfig:
    """Write the hashing config of a layout under `instant`: a bucket rescale's replacecommit (as Hudi
    does: hidden while it is pending, loaded once it completes, deleted if it is rolled back), or a
    new instant of its own for a change that rewrites nothing."""
    written = HashingConfig(expressions_of(rules, num_buckets), num_buckets, instant)
    storage.mkdirs(join(base, CONFIGS_FOLDER))
    storage.write_atomic(join(base, CONFIGS_FOLDER, written.instant + SUFFIX), written.to_json())
    return written


def discard(storage: Storage, base: str, instant: str) -> None:
    """A rolled-back replacecommit's hashing config goes with it (else Hudi would load it)."""
    storage.delete(join(base, CONFIGS_FOLDER, instant + SUFFIX))


def _timeline_instants(storage: Storage, base: str, config: TableConfig) -> list[Instant]:
    return parse_instants(storage.list_dir(join(base, timeline_folder(config))), timeline_layout(config))
