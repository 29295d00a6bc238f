"""The API lists one's own submissions, page by page, and hands out their reports; what it answers
to a token is marked private for the caches in between."""
import pytest

from leaderboard import services
from site_helpers import make_done

pytestmark = pytest.mark.django_db


def auth(key):
    return {"HTTP_AUTHORIZATION": f"Token {key}"}


def test_it_lists_only_ones_own_submissions_newest_first_in_pages(client, task, owner, other):
    key = services.api_token_create(user=owner)[1]
    mine = [make_done(task, owner, speedup=1.0 + i / 10) for i in range(5)]
    make_done(task, other)
    first = client.get("/api/submissions?per_page=2", **auth(key))
    assert first.status_code == 200
    body = first.json()
    assert body["count"] == 5 and body["pages"] == 3 and body["page"] == 1 and body["previous"] is None
    assert [r["id"] for r in body["results"]] == [mine[4].pk, mine[3].pk]
    assert body["results"][0]["verdict"] == "verified" and body["results"][0]["ranked"] is True
    assert "logs" not in body["results"][0]
    seen = [r["id"] for r in body["results"]]
    url = body["next"]
    while url:
        page = client.get(url, **auth(key)).json()
        seen += [r["id"] for r in page["results"]]
        url = page["next"]
    assert seen == [s.pk for s in reversed(mine)]


def test_answers_to_a_token_are_private_and_public_reads_are_not(client, task, owner):
    key = services.api_token_create(user=owner)[1]
    done = make_done(task, owner)
    for path in ("/api/submissions", f"/api/submissions/{done.pk}", f"/api/submissions/{done.pk}/report",
                 f"/api/submissions/{done.pk}/source", "/api/submissions/999999", "/api/tasks"):
        for ask in (client.get, client.head):
            r = ask(path, **auth(key))
            assert "private" in r.get("Cache-Control", ""), (path, ask, r.status_code)
    refused = client.get("/api/submissions", HTTP_AUTHORIZATION="Token lb_no-such-token")
    assert refused.status_code == 401 and "private" in refused["Cache-Control"]
    for path in ("/api/tasks", f"/api/submissions/{done.pk}"):  # the same for every visitor
        assert "private" not in client.get(path).get("Cache-Control", "")


@pytest.mark.parametrize("query, status, message", [
    ("page=0", 400, "'page' must be between 1"),
    ("page=abc", 400, "'page' must be a whole number"),
    ("per_page=1000", 400, "'per_page' must be between 1 and 100"),
    ("page=9", 404, "No page 9"),
])
def test_bad_pages_are_clear_errors(client, task, owner, query, status, message):
    key = services.api_token_create(user=owner)[1]
    make_done(task, owner)
    r = client.get(f"/api/submissions?{query}", **auth(key))
    assert r.status_code == status and message in r.json()["error"]


def test_the_list_needs_a_token(client, db):
    assert client.get("/api/submissions").status_code == 401


def test_the_report_is_the_stored_one_for_its_owner_and_staff(client, task, owner, other, staff):
    sub = make_done(task, owner)
    r = client.get(f"/api/submissions/{sub.pk}/report", **auth(services.api_token_create(user=owner)[1]))
    assert r.status_code == 200 and r.json() == sub.report
    assert r.json()["shapes"][0]["candidate_ms"] == sub.report["shapes"][0]["candidate_ms"]
    detail = client.get(f"/api/submissions/{sub.pk}", **auth(services.api_token_create(user=owner)[1])).json()
    assert detail["report"].endswith(f"/api/submissions/{sub.pk}/report")
    assert client.get(f"/api/submissions/{sub.pk}/report",
                      **auth(services.api_token_create(user=other)[1])).status_code == 403
    assert client.get(f"/api/submissions/{sub.pk}/report",
                      **auth(services.api_token_create(user=staff)[1])).status_code == 200
    assert client.get("/api/submissions/999999/report",
                      **auth(services.api_token_create(user=owner)[1])).status_code == 404


def test_leaderboard_entries_link_to_their_public_page(client, task, owner):
    sub = make_done(task, owner)
    entry = client.get(f"/api/tasks/softmax/leaderboard?device={sub.device_type}").json()["entries"][0]
    assert entry["page"].endswith(f"/submissions/{sub.pk}/")
    client.logout()
    assert client.get(entry["page"]).status_code == 200


def test_a_page_of_the_list_costs_a_fixed_number_of_queries(client, task, owner, django_assert_max_num_queries):
    key = services.api_token_create(user=owner)[1]
    for _ in range(6):
        make_done(task, owner)
    with django_assert_max_num_queries(6):  # token, its last use, count, the page: not one per row
        assert len(client.get("/api/submissions?per_page=6", **auth(key)).json()["results"]) == 6
