coalesce(CAST({column} AS VARCHAR), '{null}')
