"""Placeholder translation shared by the server drivers (PyMySQL, psycopg)."""

from tdebench.engines.dbapi import qmark_to_format


def test_placeholders_become_format_style_outside_quotes() -> None:
    assert qmark_to_format("SELECT '?%' || ? WHERE s LIKE '%a' AND n % 2 = ?") == \
        "SELECT '?%%' || %s WHERE s LIKE '%%a' AND n %% 2 = %s"


def test_question_marks_in_identifiers_and_double_quotes_stay() -> None:
    assert qmark_to_format('SELECT "a?" , `b?` FROM t WHERE x = ?') == 'SELECT "a?" , `b?` FROM t WHERE x = %s'
