-- step: rebuild-table
-- DuckDB has no REINDEX and cannot drop a primary key, and TPC-H gives it no other index, so its
-- one index (the key's ART) is rebuilt with its table, in one transaction.
BEGIN TRANSACTION;
CREATE TABLE {table}_rebuilt AS SELECT * FROM {table};
DROP TABLE {table};
ALTER TABLE {table}_rebuilt RENAME TO {table};
ALTER TABLE {table} ADD PRIMARY KEY ({key});
COMMIT;
