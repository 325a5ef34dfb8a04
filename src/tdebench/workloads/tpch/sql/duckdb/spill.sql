SELECT count(*) AS row_count, sum(rn) AS rn_sum FROM (
    SELECT row_number() OVER (PARTITION BY c_address, c_custkey ORDER BY r) AS rn
    FROM customer CROSS JOIN range(1, {n} + 1) AS copies(r)
) numbered
