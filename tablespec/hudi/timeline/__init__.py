"""The active timeline: instants and their files, the timeline snapshot and its transitions,
heartbeats, the table locks (tablespec's lease and Hudi's transaction lock) and the conflict check."""
