-- TPC-H Q15 for SQL Server, from the DuckDB text transpiled by sqlglot, then edited:
-- T-SQL cannot GROUP BY a select-list alias (supplier_no): grouped by the column it names.
WITH revenue AS (
  SELECT
    l_suppkey AS supplier_no,
    SUM(l_extendedprice * (
      1 - l_discount
    )) AS total_revenue
  FROM lineitem
  WHERE
    l_shipdate >= CAST('1996-01-01' AS DATE)
    AND l_shipdate < CAST('1996-04-01' AS DATE)
  GROUP BY
    l_suppkey
)
SELECT
  s_suppkey,
  s_name,
  s_address,
  s_phone,
  total_revenue
FROM supplier, revenue
WHERE
  s_suppkey = supplier_no
  AND total_revenue = (
    SELECT
      MAX(total_revenue)
    FROM revenue
  )
ORDER BY
  CASE WHEN s_suppkey IS NULL THEN 1 ELSE 0 END, s_suppkey
