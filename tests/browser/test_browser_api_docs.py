"""/api/docs as `make run` serves it (the development server, DEBUG off, --insecure): Swagger UI
from the site's own static files, under the site's Content-Security-Policy, in real Chromium with
every address outside the site refused; it lists the operations and runs one."""
from __future__ import annotations

import pytest

from proc_helpers import site_env, web_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# installed through the DevTools protocol, so the policy does not apply to it
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
    e => window.__csp.push(e.violatedDirective + ' ' + (e.blockedURI || 'inline')));
"""


@pytest.fixture
def served(transactional_db, require_postgres, tmp_path):
    """The web server as scripts/run.sh starts it (scripts/web.sh), DEBUG off, on the test database."""
    from django.db import connection

    from evaluator.tasks import get_task
    from leaderboard import services

    services.task_sync(spec=get_task("softmax"))
    env = site_env(ALLOWED_HOSTS="127.0.0.1", VAR_DIR=str(tmp_path))
    try:
        with web_server(env, tmp_path / "web.log", "/static/ninja/swagger-ui-init.js") as url:
            yield url
    finally:
        connection.close()


def test_the_docs_page_renders_and_runs_an_operation_from_the_site_alone(served, require_chromium, chromium):
    context = chromium.new_context()  # the policy enforced
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.add_init_script(RECORD_VIOLATIONS)
    outside, console = [], []
    # no network but the site: anything a CDN would serve fails and is recorded
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(served)
               else (outside.append(route.request.url), route.abort()))
    page.on("console", lambda m: console.append(m.text) if "Content Security Policy" in m.text else None)
    try:
        response = page.goto(f"{served}/api/docs")
        assert response.status == 200 and "script-src 'self'" in response.headers["content-security-policy"]
        page.wait_for_selector(".swagger-ui .opblock")
        assert page.locator(".swagger-ui .info .title").inner_text().startswith("Kernel leaderboard API")
        paths = page.locator(".opblock-summary-path").all_inner_texts()
        assert {"/api/submissions", "/api/submissions/{submission_id}", "/api/tasks",
                "/api/competitions/{slug}"} <= {p.replace("\u200b", "") for p in paths}
        schemas = page.locator(".swagger-ui .models .json-schema-2020-12__title").all_inner_texts()
        assert {"ApiError", "SubmissionOut", "SubmissionPage"} <= set(schemas), schemas

        # try it: GET /api/tasks from the page, an answer from the site's API
        tasks = page.locator("#operations-tasks-leaderboard_api_task_views_task_list")
        tasks.locator(".opblock-summary").click()
        tasks.locator("button.try-out__btn").click()
        tasks.locator("button.execute").click()
        body = tasks.locator(".responses-wrapper .live-responses-table .response-col_description pre").first
        body.wait_for()
        assert '"name": "softmax"' in body.inner_text()
        assert page.evaluate("window.__csp") == [] and console == [], (page.evaluate("window.__csp"), console)
        assert outside == []
    finally:
        context.close()
