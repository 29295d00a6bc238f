"""The API from its own schema: /api/openapi.json is valid OpenAPI 3 and lists every /api/ path,
/api/docs renders it in Chromium with no network, and schemathesis fuzzes the live server from
the schema, with a token and without: no 5xx, and every answer (errors included) matches what
the schema says of it. A view made to answer 500 fails that run (the checks can fail)."""
from __future__ import annotations

import re

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (content_type_conformance, response_headers_conformance,
                                                response_schema_conformance, status_code_conformance)

from leaderboard.models import Task

pytestmark = pytest.mark.django_db(transaction=True)

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance]
EXAMPLES = 6  # per operation and caller: the suite's time, not a cap on what the schema allows


@pytest.fixture
def api(live_server, django_user_model):
    from django.core.management import call_command

    from leaderboard.services import tokens

    call_command("load_tasks", verbosity=0)
    user = django_user_model.objects.create_user("fuzz", password="fuzz-pass-8317")
    key = tokens.api_token_create(user=user, name="fuzz")[1]
    return {"url": live_server.url, "token": key}


@pytest.fixture
def api_schema(api):
    return schemathesis.openapi.from_url(f"{api['url']}/api/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_answer_to_a_token_matches_the_schema(case, api):
    case.call_and_validate(base_url=api["url"], headers={"Authorization": f"Token {api['token']}"}, checks=CHECKS)


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_answer_without_a_token_matches_the_schema(case, api):
    case.call_and_validate(base_url=api["url"], checks=CHECKS)


def test_the_schema_is_valid_openapi_3_and_lists_every_api_address(client, db):
    from django.urls import get_resolver
    from openapi_spec_validator import validate

    spec = client.get("/api/openapi.json").json()
    validate(spec)
    assert spec["openapi"].startswith("3.")
    listed = {re.sub(r"\{[^}]+\}", "{}", path) for path in spec["paths"]}

    def addresses(patterns, prefix=""):
        for p in patterns:
            route = prefix + str(p.pattern)
            if hasattr(p, "url_patterns"):
                yield from addresses(p.url_patterns, route)
            else:
                yield route

    served = {"/" + re.sub(r"<[^>]+>", "{}", a).rstrip("$").lstrip("^") for a in addresses(get_resolver().url_patterns)}
    # "/api/" is the API's own root (ninja's include), no operation
    api = {a for a in served if a.startswith("/api/") and a != "/api/" and not a.startswith(("/api/docs", "/api/openapi"))}
    assert api and api <= listed | {a.rstrip("/") for a in listed}, sorted(api - listed)


def test_a_view_that_answers_500_fails_the_fuzzing(api, monkeypatch):
    """The checks above can fail: with the task list made to raise, a case of that operation is
    reported as a server error."""
    from schemathesis.core.failures import FailureGroup

    from leaderboard import selectors

    loaded = schemathesis.openapi.from_url(f"{api['url']}/api/openapi.json")
    operation = loaded["/api/tasks"]["GET"]

    def broken(*args, **kwargs):
        raise RuntimeError("made to fail")

    monkeypatch.setattr(selectors, "task_list_with_stats", broken)  # what GET /api/tasks reads
    with pytest.raises((FailureGroup, AssertionError)):
        operation.Case().call_and_validate(base_url=api["url"], checks=CHECKS)
