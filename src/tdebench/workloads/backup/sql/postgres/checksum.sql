SELECT count(*), sum(('x' || left(md5(concat_ws('|', {values})), {digits}))::bit({bits})::bigint)::text FROM {table}
