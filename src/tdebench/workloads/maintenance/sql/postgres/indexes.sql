SELECT indexname FROM pg_indexes WHERE tablename = '{table}'
