-- step: reindex
-- lineitem's primary-key and foreign-key indexes
REINDEX {table};
