"""Writing a table without Spark: creating it, preparing records, planning which slice each
record goes to (small files first), writing a slice's files, removing spurious ones, and
rolling a write back."""
