"""Compaction of a merge-on-read table, as Apache Hudi schedules it: when it is due, which file
slices it takes, and its plan written as `T.compaction.requested`.

Hudi's names (measured in Hudi 0.15's and 1.2's bundles, the same in both): the trigger
(hoodie.compact.inline.trigger.strategy) and the strategy classes (hoodie.compaction.strategy).
"""
from __future__ import annotations

_STRATEGY_PACKAGE = "org.apache.hudi.table.action.compact.strategy."
# spec strategy -> Hudi's class (1.2 adds PartitionRegexBased and Composite, which 0.15 lacks)
STRATEGIES = {name: _STRATEGY_PACKAGE + cls for name, cls in (
    ("LOG_FILE_SIZE", "LogFileSizeBasedCompactionStrategy"),
    ("LOG_FILE_COUNT", "LogFileNumBasedCompactionStrategy"),
    ("BOUNDED_IO", "BoundedIOCompactionStrategy"),
    ("DAY_BASED", "DayBasedCompactionStrategy"),
    ("UNBOUNDED", "UnBoundedCompactionStrategy"),
)}
# spec trigger -> Hudi's trigger strategy
TRIGGERS = {"DELTA_COMMITS": "NUM_COMMITS", "ELAPSED_TIME": "TIME_ELAPSED", "EITHER": "NUM_OR_TIME",
            "BOTH": "NUM_AND_TIME"}
