coalesce({column}::text, '{null}')
