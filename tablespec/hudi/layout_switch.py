"""The gap between a layout rewrite and the hoodie.properties that describes it.

A bucket bootstrap or rescale and `replace_table` commit the rewritten data first (one
replacecommit, marked `REWRITE_MARK`) and switch hoodie.properties afterwards, recording the
rewrite's instant under `SWITCHED_KEY`. Until the switch (normally milliseconds; after a crash,
until the next apply) the properties describe a layout the files no longer have, so no writer
configuration can be derived from them.
"""
from __future__ import annotations

from collections.abc import Mapping

from tablespec.hudi.timeline.active import Timeline
from tablespec.hudi.timeline.instant import Instant

REWRITE_MARK = "tablespec.layout.rewrite"   # commit extra metadata: hoodie.properties switches after this commit
SWITCHED_KEY = "tablespec.layout.instant"   # hoodie.properties: the rewrite whose layout it describes


def unswitched_rewrite(timeline: Timeline, props: Mapping[str, str]) -> Instant | None:
    """The latest completed layout rewrite, when hoodie.properties does not describe it yet."""
    for instant in reversed(timeline.commits()):
        if instant.action != "replacecommit":
            continue
        if timeline.commit_metadata(instant).extra_metadata.get(REWRITE_MARK):
            return None if props.get(SWITCHED_KEY) == instant.timestamp else instant
    return None
