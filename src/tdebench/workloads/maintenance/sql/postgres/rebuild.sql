-- step: reindex-table
-- lineitem's primary key and foreign-key indexes
REINDEX TABLE {table};
