"""Placeholder translation shared by the server drivers (PyMySQL, psycopg, libpq, oracledb)."""

from tdebench.engines.dbapi import qmark_to_dollar, qmark_to_format, qmark_to_numeric


def test_placeholders_become_format_style_outside_quotes() -> None:
    assert qmark_to_format("SELECT '?%' || ? WHERE s LIKE '%a' AND n % 2 = ?") == \
        "SELECT '?%%' || %s WHERE s LIKE '%%a' AND n %% 2 = %s"


def test_question_marks_in_identifiers_and_double_quotes_stay() -> None:
    assert qmark_to_format('SELECT "a?" , `b?` FROM t WHERE x = ?') == 'SELECT "a?" , `b?` FROM t WHERE x = %s'


def test_placeholders_become_numbered_outside_quotes_with_percent_signs_left_alone() -> None:
    sql = "SELECT '?%' || ? WHERE s LIKE '%a' AND n % 2 = ? AND \"c?\" = ?"
    assert qmark_to_dollar(sql) == "SELECT '?%' || $1 WHERE s LIKE '%a' AND n % 2 = $2 AND \"c?\" = $3"
    assert qmark_to_numeric(sql) == "SELECT '?%' || :1 WHERE s LIKE '%a' AND n % 2 = :2 AND \"c?\" = :3"
