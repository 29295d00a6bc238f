"""The site's own 404 and 500 pages, with DEBUG off."""
import pytest
from django.test import Client
from django.urls import path


def boom(request):
    raise RuntimeError("a bug")


urlpatterns = [path("boom/", boom)]


def test_an_unknown_address_gets_the_sites_404_page(client, settings, db):
    settings.DEBUG = False
    r = client.get("/no/such/page/")
    html = r.content.decode()
    assert r.status_code == 404
    assert 'id="not-found"' in html and 'class="site-header"' in html and "Traceback" not in html


def test_an_unknown_submission_gets_the_404_page(client, settings, owner):
    settings.DEBUG = False
    client.force_login(owner)
    r = client.get("/submissions/999999/")
    assert r.status_code == 404 and 'id="not-found"' in r.content.decode()


@pytest.mark.urls(__name__)
def test_an_error_gets_the_sites_500_page(settings, db):
    settings.DEBUG = False
    r = Client(raise_request_exception=False).get("/boom/")
    html = r.content.decode()
    assert r.status_code == 500
    assert 'id="server-error"' in html and "a bug" not in html and "Traceback" not in html
