from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from leaderboard.api import competition_views, views


def api_path(route, view, name):
    """A route of the API, exempt from Django's CSRF check: the API knows its callers by the
    Authorization header alone, never by a browser's cookies, so a forged cross-site request has
    nothing to ride on; and a method the view does not take meets its JSON 405 (with Allow), not
    a CSRF refusal made before the view can say so."""
    return path(route, csrf_exempt(view), name=name)


urlpatterns = [
    api_path("submissions", views.submissions, name="api-submissions"),
    api_path("submissions/<int:submission_id>", views.submission_detail, name="api-submission"),
    api_path("submissions/<int:submission_id>/source", views.submission_source, name="api-submission-source"),
    api_path("submissions/<int:submission_id>/report", views.submission_report, name="api-submission-report"),
    api_path("submissions/<int:submission_id>/profile.ncu-rep", views.submission_profile_file,
             name="api-submission-profile-file"),
    api_path("tasks", views.task_list, name="api-tasks"),
    api_path("tasks/<slug:name>/leaderboard", views.leaderboard, name="api-leaderboard"),
    api_path("competitions", competition_views.competition_list, name="api-competitions"),
    # <str:> rather than <slug:>: a malformed name gets the API's JSON 404, not the site's page
    api_path("competitions/<str:slug>", competition_views.competition_detail, name="api-competition"),
    api_path("competitions/<str:slug>/export.jsonl", competition_views.competition_export,
             name="api-competition-export"),
]
