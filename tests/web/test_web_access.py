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
def test_it_hides_an_unranked_submission_from_another_user(client, task, owner, other, name):
    from web_helpers import make_done

    for sub in (make_done(task, owner, mode="test"), make_done(task, owner, verdict="flagged", codes=["crash"],
                                                               reasons=["x"]),
                make_done(task, owner, verdict="rejected", codes=["crash"], reasons=["x"])):
        client.force_login(other)
        r = client.get(reverse(name, args=[sub.pk]))
        assert r.status_code == 404
        assert b"custom_kernel" not in r.content


@pytest.mark.parametrize("name", ["submission_detail", "submission_status"])
def test_a_ranked_entry_is_public_but_its_code_is_not(client, done, other, name):
    """Leaderboard rows link to their entry: anyone reads the result, not the code or the logs."""
    for who in (None, other):
        client.logout()
        if who:
            client.force_login(who)
        r = client.get(reverse(name, args=[done.pk]))
        assert r.status_code == 200
        html = r.content.decode()
        assert "Verified" in html and 'id="shapes"' in html
        assert "custom_kernel" not in html and "runner said hi" not in html


def test_a_published_entry_shows_its_code_to_everyone(client, done, owner, other):
    from leaderboard import services

    url = reverse("submission_detail", args=[done.pk])
    client.force_login(other)
    assert client.post(reverse("submission_publish", args=[done.pk])).status_code == 302
    assert "custom_kernel" not in client.get(url).content.decode()  # only the owner may publish
    client.force_login(owner)
    assert 'id="publish-form"' in client.get(url).content.decode()
    # the button alone publishes nothing: publishing cannot be undone
    r = client.post(reverse("submission_publish", args=[done.pk]), follow=True)
    assert "Nothing was published" in r.content.decode()
    done.refresh_from_db()
    assert done.published_at is None
    r = client.post(reverse("submission_publish", args=[done.pk]), {"confirm": "yes"}, follow=True)
    assert "The code is now public" in r.content.decode()
    client.logout()
    html = client.get(url).content.decode()
    assert "custom_kernel" in html and "published by its owner" in html and 'id="publish-form"' not in html
    done.refresh_from_db()
    assert done.published_at is not None
    assert done.audit_entries.filter(action="publish", actor=owner).exists()
    with pytest.raises(services.NotAllowed):
        services.submission_publish(submission=done, actor=owner)


def test_a_published_test_run_is_public_too(client, task, owner, other):
    from leaderboard import services
    from web_helpers import make_done

    sub = make_done(task, owner, mode="test")
    services.submission_publish(submission=sub, actor=owner)
    client.force_login(other)
    assert "custom_kernel" in client.get(reverse("submission_detail", args=[sub.pk])).content.decode()


@pytest.mark.parametrize("name", ["submission_detail", "submission_status"])
def test_it_shows_staff_any_submission(client, done, staff, name):
    client.force_login(staff)
    r = client.get(reverse(name, args=[done.pk]))
    assert r.status_code == 200


def test_only_staff_get_the_admin_and_console_links(client, done, owner, staff):
    admin_url = reverse("admin:leaderboard_submission_change", args=[done.pk])
    console_url = reverse("audit_item", args=[done.pk])
    client.force_login(owner)
    html = client.get(reverse("submission_detail", args=[done.pk])).content.decode()
    assert admin_url not in html and console_url not in html
    client.force_login(staff)
    html = client.get(reverse("submission_detail", args=[done.pk])).content.decode()
    assert admin_url in html and console_url in html


@pytest.mark.parametrize("name", ["submission_detail", "submission_status"])
def test_it_sends_anonymous_visitors_to_log_in(client, task, owner, name):
    from web_helpers import make_done

    sub = make_done(task, owner, mode="test")
    r = client.get(reverse(name, args=[sub.pk]))
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


def test_every_leaderboard_row_links_to_its_entry(client, done, owner, other):
    url = reverse("task_detail", args=[done.task.name])
    link = reverse("submission_detail", args=[done.pk]).encode()
    assert link in client.get(url).content
    client.force_login(other)
    assert link in client.get(url).content
    client.force_login(owner)
    r = client.get(url)
    assert link in r.content and b'id="mine"' in r.content


def test_logout_is_post_only(client, owner):
    client.force_login(owner)
    assert client.get(reverse("logout")).status_code == 405
    r = client.post(reverse("logout"))
    assert r.status_code == 302
    assert client.get(reverse("profile")).status_code == 302


def test_the_leaderboard_marks_entries_whose_code_is_public(client, done, owner):
    from leaderboard import services

    url = reverse("task_detail", args=[done.task.name])
    assert 'class="code-open"' not in client.get(url).content.decode()
    services.submission_publish(submission=done, actor=owner)
    assert 'class="code-open"' in client.get(url).content.decode()
