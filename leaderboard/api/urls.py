from django.urls import path

from leaderboard.api import competition_views, views

urlpatterns = [
    path("submissions", views.submissions, name="api-submissions"),
    path("submissions/<int:submission_id>", views.submission_detail, name="api-submission"),
    path("submissions/<int:submission_id>/source", views.submission_source, name="api-submission-source"),
    path("submissions/<int:submission_id>/report", views.submission_report, name="api-submission-report"),
    path("submissions/<int:submission_id>/profile.ncu-rep", views.submission_profile_file,
         name="api-submission-profile-file"),
    path("tasks", views.task_list, name="api-tasks"),
    path("tasks/<slug:name>/leaderboard", views.leaderboard, name="api-leaderboard"),
    path("competitions", competition_views.competition_list, name="api-competitions"),
    # <str:> rather than <slug:>: a malformed name gets the API's JSON 404, not the site's page
    path("competitions/<str:slug>", competition_views.competition_detail, name="api-competition"),
    path("competitions/<str:slug>/export.jsonl", competition_views.competition_export,
         name="api-competition-export"),
]
