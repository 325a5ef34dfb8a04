-- TPC-H Q8 for SQLite, from the DuckDB text transpiled by sqlglot, then edited:
-- SQLite has no EXTRACT: the year is strftime('%Y', date) as an integer.
SELECT
  o_year,
  CAST(SUM(CASE WHEN nation = 'BRAZIL' THEN volume ELSE 0 END) AS REAL) / SUM(volume) AS mkt_share
FROM (
  SELECT
    CAST(strftime('%Y', o_orderdate) AS INTEGER) AS o_year,
    l_extendedprice * (
      1 - l_discount
    ) AS volume,
    n2.n_name AS nation
  FROM part, supplier, lineitem, orders, customer, nation AS n1, nation AS n2, region
  WHERE
    p_partkey = l_partkey
    AND s_suppkey = l_suppkey
    AND l_orderkey = o_orderkey
    AND o_custkey = c_custkey
    AND c_nationkey = n1.n_nationkey
    AND n1.n_regionkey = r_regionkey
    AND r_name = 'AMERICA'
    AND s_nationkey = n2.n_nationkey
    AND o_orderdate BETWEEN DATE('1995-01-01') AND DATE('1996-12-31')
    AND p_type = 'ECONOMY ANODIZED STEEL'
) AS all_nations
GROUP BY
  o_year
ORDER BY
  o_year NULLS LAST
