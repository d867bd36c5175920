"""Hudi's metadata table (`.hoodie/metadata`), written as Apache Hudi 0.15 writes it: the `files`
partition of a table version 6 copy-on-write table.

The metadata table is itself a merge-on-read Hudi table whose base files are HFiles. Its
`files` partition has one file group, `files-0000-0`, keyed by data partition (`.` for a
non-partitioned table) plus `__all_partitions__`; each record lists files (name -> size) added
or deleted. Modules:

- `records`: HoodieMetadataRecord and the pure conversions "this data instant added / removed
  these files" -> `files` records.
- `layout`: names and paths, the metadata table's own timeline, its file slices; `Format` tells
  Hudi 0.15's layout (version 6) from Hudi 1.x's (versions 8 and 9).
- `instants`: the metadata timeline's instant files, in either format.
- `writer`: initialize from a listing, one deltacommit per data instant, compaction.
- `reader`: the listing the metadata table gives, with Hudi's rules for which log blocks count.
- `record_index`, `record_index_writer`, `record_index_reader`: Hudi's record index (the
  `record_index` partition): key hashing and records, building it, lookups and scans.
- `column_stats`, `bloom_filters`, `column_stats_changes`: Hudi's data-skipping partitions
  (`column_stats`, `bloom_filters`, `partition_stats` on version 9): key hashing and records, and
  what an instant does to them, read from the Parquet footers of the files it wrote.
- `cleaner`, `archiver`: the metadata table's own clean (after its compaction) and archive (after
  the data table's), so its files stay bounded; `lsm_archiver` archives Hudi 1.x's into its own
  LSM history.
"""
