-- step: alter-table-force
-- InnoDB keeps a table in its primary-key index, so rebuilding that index rebuilds the table, and
-- FORCE does exactly this (with the secondary indexes). OPTIMIZE TABLE would do the same for
-- InnoDB ("recreate + analyze") plus a statistics update, which is not an index rebuild.
ALTER TABLE {table} FORCE;
