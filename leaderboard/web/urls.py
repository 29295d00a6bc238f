from django.contrib.auth import views as auth_views
from django.urls import path

from leaderboard.web.throttle import login_failed, throttled
from leaderboard.web import profile_view
from leaderboard.web.views import (
    accounts, audit, compare, competition, console_competitions, console_tasks, home, scoring, submission, task, upload,
)

urlpatterns = [
    path("", home.home, name="home"),
    path("tasks/<slug:name>/", task.task_detail, name="task_detail"),
    path("tasks/<slug:name>/starter.py", task.task_starter, name="task_starter"),
    path("upload/", upload.upload, name="upload"),
    path("submissions/<int:pk>/", submission.submission_detail, name="submission_detail"),
    path("submissions/<int:pk>/status/", submission.submission_status, name="submission_status"),
    path("submissions/<int:pk>/publish/", submission.submission_publish, name="submission_publish"),
    path("submissions/<int:pk>/profile.ncu-rep", profile_view.profile_file, name="submission_profile_file"),
    path("audit/", audit.queue, name="audit_queue"),
    path("audit/rejected/", audit.rejected, name="audit_rejected"),
    path("audit/<int:pk>/", audit.item, name="audit_item"),
    path("audit/<int:pk>/decide/", audit.decide, name="audit_decide"),
    path("audit/<int:pk>/code/", console_competitions.code_decide, name="audit_code_decide"),
    path("audit/tasks/", console_tasks.task_console, name="console_tasks"),
    path("audit/tasks/<slug:name>/retire/", console_tasks.task_retire, name="console_task_retire"),
    path("audit/competitions/", console_competitions.competition_list, name="console_competitions"),
    path("audit/competitions/new/", console_competitions.competition_create, name="console_competition_create"),
    path("audit/competitions/<slug:slug>/edit/", console_competitions.competition_edit,
         name="console_competition_edit"),
    path("competitions/", competition.competition_list, name="competition_list"),
    path("competitions/<slug:slug>/", competition.competition_detail, name="competition_detail"),
    path("competitions/<slug:slug>/export.jsonl", competition.competition_export, name="competition_export"),
    path("compare/", compare.compare, name="compare"),
    path("scoring/", scoring.scoring_page, name="scoring"),
    path("accounts/signup/", accounts.signup, name="signup"),
    path("accounts/login/", throttled("login", failed=login_failed)(
        auth_views.LoginView.as_view(redirect_authenticated_user=True)), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Django's own password reset: a link by e-mail to the address given at sign-up; every request
    # sends a mail, so requests are throttled per client and per address
    path("accounts/password-reset/", throttled("reset")(auth_views.PasswordResetView.as_view()),
         name="password_reset"),
    path("accounts/password-reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("accounts/password-reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(),
         name="password_reset_confirm"),
    path("accounts/password-reset/done/", auth_views.PasswordResetCompleteView.as_view(),
         name="password_reset_complete"),
    path("accounts/profile/", accounts.profile, name="profile"),
    path("accounts/tokens/", accounts.token_create, name="token_create"),
    path("accounts/tokens/<int:token_id>/revoke/", accounts.token_revoke, name="token_revoke"),
]
