"""Table services on the format alone: cleaning, rolling back failed writes, clustering plans,
the table-version upgrade and the check of data files against the timeline."""
