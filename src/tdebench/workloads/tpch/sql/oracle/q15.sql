-- TPC-H Q15 for Oracle, from the DuckDB text transpiled by sqlglot, then edited:
-- Oracle (before 23ai) cannot GROUP BY a select-list alias (supplier_no): grouped by the column it names;
-- dates as TO_DATE with the format, as queries.py writes them for Oracle.
WITH revenue AS (
  SELECT
    l_suppkey AS supplier_no,
    SUM(l_extendedprice * (
      1 - l_discount
    )) AS total_revenue
  FROM lineitem
  WHERE
    l_shipdate >= TO_DATE('1996-01-01', 'YYYY-MM-DD')
    AND l_shipdate < TO_DATE('1996-04-01', 'YYYY-MM-DD')
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
  s_suppkey
