-- TPC-H Q13 for Oracle, from the DuckDB text transpiled by sqlglot, then edited:
-- Oracle has no column list on a derived-table alias (c_orders (c_custkey, c_count)): the count is aliased inside.
SELECT
  c_count,
  COUNT(*) AS custdist
FROM (
  SELECT
    c_custkey,
    COUNT(o_orderkey) AS c_count
  FROM customer
  LEFT OUTER JOIN orders
    ON c_custkey = o_custkey AND o_comment NOT LIKE '%special%requests%'
  GROUP BY
    c_custkey
) c_orders
GROUP BY
  c_count
ORDER BY
  custdist DESC NULLS LAST,
  c_count DESC NULLS LAST
