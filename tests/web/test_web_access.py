"""Who may see a submission: its owner and staff; to everyone else it does not exist."""
import pytest
from django.urls import reverse


@pytest.mark.parametrize("name", ["submission_detail", "submission_status"])
def test_it_shows_the_owner_their_submission(client, done, owner, name):
    client.force_login(owner)
    r = client.get(reverse(name, args=[done.pk]))
    assert r.status_code == 200
    assert b"verified" in r.content


@pytest.mark.parametrize("name", ["submission_detail", "submission_status"])
def test_it_hides_a_submission_from_another_user(client, done, other, name):
    client.force_login(other)
    r = client.get(reverse(name, args=[done.pk]))
    assert r.status_code == 404
    assert b"custom_kernel" not in r.content


@pytest.mark.parametrize("name", ["submission_detail", "submission_status"])
def test_it_shows_staff_any_submission(client, done, staff, name):
    client.force_login(staff)
    r = client.get(reverse(name, args=[done.pk]))
    assert r.status_code == 200


def test_only_staff_get_the_admin_link(client, done, owner, staff):
    admin_url = reverse("admin:leaderboard_submission_change", args=[done.pk])
    client.force_login(owner)
    assert admin_url not in client.get(reverse("submission_detail", args=[done.pk])).content.decode()
    client.force_login(staff)
    assert admin_url in client.get(reverse("submission_detail", args=[done.pk])).content.decode()


@pytest.mark.parametrize("name", ["submission_detail", "submission_status"])
def test_it_sends_anonymous_visitors_to_log_in(client, done, name):
    r = client.get(reverse(name, args=[done.pk]))
    assert r.status_code == 302
    assert r["Location"].startswith(reverse("login"))


def test_it_404s_an_unknown_submission(client, owner, db):
    client.force_login(owner)
    assert client.get(reverse("submission_detail", args=[999999])).status_code == 404


def test_upload_requires_login(client, db):
    r = client.get(reverse("upload"))
    assert r.status_code == 302 and r["Location"].startswith(reverse("login"))


def test_profile_requires_login(client, db):
    r = client.get(reverse("profile"))
    assert r.status_code == 302


def test_the_leaderboard_links_code_only_for_its_owner_and_staff(client, done, owner, other, staff, task):
    url = reverse("task_detail", args=[task.name])
    link = reverse("submission_detail", args=[done.pk]).encode()
    assert link not in client.get(url).content
    client.force_login(other)
    r = client.get(url)
    assert b"owner" in r.content and link not in r.content
    client.force_login(owner)
    r = client.get(url)
    assert link in r.content and b'id="mine"' in r.content
    client.force_login(staff)
    assert link in client.get(url).content


def test_logout_is_post_only(client, owner):
    client.force_login(owner)
    assert client.get(reverse("logout")).status_code == 405
    r = client.post(reverse("logout"))
    assert r.status_code == 302
    assert client.get(reverse("profile")).status_code == 302
