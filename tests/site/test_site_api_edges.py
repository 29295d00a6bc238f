"""Edges of the public submission detail and source (ids out of range, a published
profile run, a disqualified or banned owner's entry, and the queries of one detail)."""
import pytest

from leaderboard import services
from leaderboard.models import Submission
from site_helpers import SOURCE, make_done

pytestmark = pytest.mark.django_db


def auth(key):
    return {"HTTP_AUTHORIZATION": f"Token {key}"}


@pytest.fixture
def other_key(other):
    return services.api_token_create(user=other)[1]


@pytest.mark.parametrize("suffix", ["", "/source", "/report", "/profile.ncu-rep"])
@pytest.mark.parametrize("number", ["2147483648", "9223372036854775808", "9" * 40])
def test_an_id_out_of_range_is_a_json_answer_not_a_500(client, other_key, suffix, number):
    for extra in ({}, auth(other_key)):
        resp = client.get(f"/api/submissions/{number}{suffix}", **extra)
        assert resp.status_code in (401, 404), (resp.status_code, resp.content[:200])
        assert resp["Content-Type"].startswith("application/json")


def test_a_published_profile_run_shows_its_code_but_not_its_profile(client, task, owner, other_key):
    sub = make_done(task, owner, mode="profile")
    services.submission_publish(submission=sub, actor=owner)
    for extra in ({}, auth(other_key)):
        body = client.get(f"/api/submissions/{sub.pk}", **extra).json()
        assert body["code_open"] is True and body["source"]
        assert "profile" not in body and "profile_file" not in body and "report" not in body
        assert client.get(body["source"], **extra).json()["source"] == SOURCE
        assert client.get(f"/api/submissions/{sub.pk}/report", **extra).status_code in (401, 403)


def test_a_disqualified_entry_is_no_longer_public(client, task, owner, other_key, staff):
    sub = make_done(task, owner)
    services.submission_disqualify(submission=sub, actor=staff, reason="forged")
    assert client.get(f"/api/submissions/{sub.pk}").status_code == 401
    assert client.get(f"/api/submissions/{sub.pk}", **auth(other_key)).status_code == 404
    assert client.get(f"/api/submissions/{sub.pk}/source", **auth(other_key)).status_code == 404


def test_a_banned_users_entry_is_not_public(client, task, owner, other_key, staff):
    sub = make_done(task, owner)
    services.user_ban(user=owner, actor=staff, reason="cheating")
    assert client.get(f"/api/submissions/{sub.pk}", **auth(other_key)).status_code == 404
    assert client.get(f"/api/submissions/{sub.pk}").status_code == 401


def test_one_public_detail_costs_a_bounded_number_of_queries(client, task, owner, django_assert_max_num_queries):
    sub = make_done(task, owner)
    Submission.objects.filter(pk=sub.pk).update(published_at=None)
    with django_assert_max_num_queries(8):
        assert client.get(f"/api/submissions/{sub.pk}").status_code == 200
