WITH RECURSIVE copies(r) AS (SELECT 1 UNION ALL SELECT r + 1 FROM copies WHERE r < {n})
SELECT count(*) AS row_count, sum(rn) AS rn_sum FROM (
    SELECT row_number() OVER (PARTITION BY canary, marker, id ORDER BY r) AS rn
    FROM tdebench_canary CROSS JOIN copies
) numbered
