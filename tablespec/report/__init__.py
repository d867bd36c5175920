"""`tablespec report`: a health report of tables, from their metadata only (no data file is read).

figures.py works out one table's figures (file sizes, partitions, services, drift) from its observed
state and plan, history.py its timeline's (active and archived: commits, cleans, durations, pending
work), score.py the score and the reasons that lowered it, warehouse.py gathers them for every table
(an unreadable table is reported as such, the others still are) and html.py renders them as one
self-contained HTML page; the JSON (`--format json`) is the same figures as they are.
"""
