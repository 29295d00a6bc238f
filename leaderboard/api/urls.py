from django.urls import path

from leaderboard.api import views

urlpatterns = [
    path("submissions", views.submissions, name="api-submissions"),
    path("submissions/<int:submission_id>", views.submission_detail, name="api-submission"),
    path("submissions/<int:submission_id>/report", views.submission_report, name="api-submission-report"),
    path("tasks", views.task_list, name="api-tasks"),
    path("tasks/<slug:name>/leaderboard", views.leaderboard, name="api-leaderboard"),
]
