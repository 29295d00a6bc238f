"""Not collected by the suite (no test_ prefix): test_test_databases.py runs it in a pytest of its
own. Its one test leaves a session open on the test database, as a connection that Django can no
longer reach does once Playwright's event loop runs in the main thread (tests/conftest.py,
django_db_setup)."""
import psycopg
import pytest

LEFT_OPEN = []


@pytest.mark.django_db
def test_a_session_is_left_open():
    from django.db import connection

    s = connection.settings_dict
    LEFT_OPEN.append(psycopg.connect(dbname=s["NAME"], user=s["USER"], password=s["PASSWORD"] or None,
                                     host=s["HOST"], port=s["PORT"] or None))
    assert LEFT_OPEN[0].execute("SELECT current_database()").fetchone()[0] == s["NAME"]
