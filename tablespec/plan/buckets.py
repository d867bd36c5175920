"""Bucket counts per partition (RFC-89) and the sizing advice the planner gives.

The table's bucket layout is `hoodie.bucket.index.num.buckets` plus optional rules
`[{pattern, numBuckets}]` (first full regex match on the partition path wins). The same
function decides the count for the planner (desired and observed) and for writers.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from tablespec.hudi.config import table_index_type
from tablespec.spec.sizes import human_bytes, size_text


@dataclass(frozen=True)
class BucketLayout:
    num_buckets: int
    rules: tuple[tuple[str, int], ...] = ()

    def buckets_for(self, partition: str) -> int:
        for pattern, n in self.rules:
            if re.fullmatch(pattern, partition):
                return n
        return self.num_buckets

    @classmethod
    def from_spec(cls, spec) -> BucketLayout | None:
        index = spec.spec.index
        if index.type != "BUCKET":
            return None
        return cls(index.num_buckets, tuple((r.pattern, r.num_buckets) for r in index.partition_buckets))

    @classmethod
    def of_bucket_spec(cls, spec) -> BucketLayout:
        """The layout of a spec that declares a BUCKET index (callers have checked it does)."""
        layout = cls.from_spec(spec)
        if layout is None:
            raise ValueError(f"{spec.metadata.name}: the spec declares no BUCKET index")
        return layout

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> BucketLayout | None:
        from tablespec.plan.settings import NUM_BUCKETS, PARTITION_BUCKETS

        if table_index_type(props) != "BUCKET" or not props.get(NUM_BUCKETS):
            return None
        rules = json.loads(props.get(PARTITION_BUCKETS) or "[]")
        return cls(int(props[NUM_BUCKETS]), tuple((r["pattern"], int(r["numBuckets"])) for r in rules))


def suggested_buckets(partition_bytes: int, target_file_size: int) -> int:
    """Buckets that make files of about the target size for the largest partition."""
    return max(1, math.ceil(partition_bytes / max(1, target_file_size)))


def sizing_warning(partition_bytes: dict[str, int], layout: BucketLayout, target_file_size: int) -> str | None:
    """The seed article's warning: too few buckets make huge files, too many make tiny ones."""
    if not partition_bytes:
        return None
    largest = max(partition_bytes.values())
    if largest == 0:
        return None
    sizes = [b / layout.buckets_for(p) for p, b in partition_bytes.items()]
    avg = sum(sizes) / len(sizes)
    suggest = suggested_buckets(largest, target_file_size)
    target = f"{size_text(target_file_size)} (clustering.targetFileSize)"
    if max(sizes) > 2 * target_file_size:
        return (f"expected bucket files of up to {human_bytes(int(max(sizes)))}, more than twice the target "
                f"{target}: too few buckets; consider numBuckets: {suggest}")
    if avg < target_file_size / 8 and layout.num_buckets > suggest:
        return (f"expected bucket files of {human_bytes(int(avg))} on average, far below the target "
                f"{target}: too many buckets make small files; consider numBuckets: {suggest}")
    return None
