"""Hudi's file formats, read and written byte for byte: Avro schemas, HFile, log blocks, Java
properties, file names, partition markers, and the commit, clean, rollback and index-definition files."""
