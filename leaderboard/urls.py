from django.contrib import admin
from django.urls import include, path

from leaderboard.serving.health import healthz
from leaderboard.web.throttle import login_failed, throttled

# the admin's login page counts against the same limits as the site's (one account, one address)
admin.site.login = throttled("login", failed=login_failed)(admin.site.login)

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/", include("leaderboard.api.urls")),
    path("", include("leaderboard.web.urls")),
]

# the site's own pages (templates/errors/, 404.html, 500.html); shown whenever DEBUG is off
handler400 = "leaderboard.web.views.errors.bad_request"
handler403 = "leaderboard.web.views.errors.permission_denied"
handler404 = "leaderboard.web.views.errors.page_not_found"
handler500 = "leaderboard.web.views.errors.server_error"
