COALESCE(CAST({column} AS CHAR), '{null}')
