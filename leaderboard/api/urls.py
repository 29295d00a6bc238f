from django.urls import path

from leaderboard.api import views

urlpatterns = [
    path("submissions", views.submissions, name="api-submissions"),
    path("submissions/<int:submission_id>", views.submission_detail, name="api-submission"),
    path("submissions/<int:submission_id>/report", views.submission_report, name="api-submission-report"),
    path("submissions/<int:submission_id>/profile.ncu-rep", views.submission_profile_file,
         name="api-submission-profile-file"),
    path("tasks", views.task_list, name="api-tasks"),
    path("tasks/<slug:name>/leaderboard", views.leaderboard, name="api-leaderboard"),
]
