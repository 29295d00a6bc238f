from django.contrib import admin
from django.urls import include, path

from leaderboard.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/", include("leaderboard.api.urls")),
    path("", include("leaderboard.web.urls")),
]
