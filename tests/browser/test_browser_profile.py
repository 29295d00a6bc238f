"""Profile mode in the browser: upload examples/softmax.py with the profile choice, watch a real
worker finish it, and read the profile on the result page (CPU: torch.profiler's operator table)."""
from __future__ import annotations

import re

import pytest

from leaderboard.models import Submission
from test_browser_flows import sign_up, softmax_example, watch_status

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]


def test_a_profile_run_is_read_on_its_result_page(page, site, worker, tmp_path):
    base = site.url
    sign_up(page, base, "pat")
    page.get_by_role("link", name="Upload").click()
    page.select_option("#id_task", "softmax")
    page.check("input[name=mode][value=profile]")
    page.set_input_files("#id_file", str(softmax_example()))
    page.click("#upload-form button[type=submit]")
    page.wait_for_url(re.compile(r"/submissions/\d+/$"))
    submission = Submission.objects.get(user__username="pat")
    assert submission.mode == "profile"

    seen = watch_status(page, timeout_s=600)
    submission.refresh_from_db()
    assert seen[-1] == "done", (seen, submission.error, submission.error_detail[-6000:], page.inner_text("#result"))
    assert page.inner_text("#verdict") == "Verified (profile run)", page.inner_text("#result")
    assert page.inner_text("#verdict-title") == "Verified (profile run)"
    section = page.locator("#profile")
    assert section.is_visible() and "torch.profiler" in section.inner_text()
    ops = page.locator("#profile-ops tbody tr").all_inner_texts()
    assert any("triton _softmax_rows" in row for row in ops) and any("custom_kernel" in row for row in ops)
    assert "ms" in page.locator("#profile-floor").inner_text() and "above any CPU" in section.inner_text()
    page.locator("#profile-table summary").click()
    assert "Self CPU" in page.locator("#profile-table pre").inner_text()
    page.screenshot(path=str(tmp_path / "profile.png"), full_page=True)
