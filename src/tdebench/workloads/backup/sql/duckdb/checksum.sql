SELECT count(*), CAST(sum(hash(concat_ws('|', {values})) >> {shift}) AS VARCHAR) FROM {table}
