SELECT count(*) AS row_count, sum(rn) AS rn_sum FROM (
    SELECT row_number() OVER (PARTITION BY canary, marker, id ORDER BY r) AS rn
    FROM tdebench_canary CROSS JOIN generate_series(1, {n}) AS copies(r)
) numbered
