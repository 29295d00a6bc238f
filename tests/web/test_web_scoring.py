"""The site's page on how scoring works (/scoring/): open to anyone, its numbers read from the code
that applies them, and linked from every page's footer, the home page, the boards and results."""
import re

from django.urls import reverse

from leaderboard.web.result import REASON_WORDS
from web_helpers import make_done


def section(html: str, element_id: str) -> str:
    return re.search(rf'id="{element_id}".*?</(ul|table|details)>', html, re.S).group(0)


def test_the_scoring_page_says_what_the_code_does(client, task):
    r = client.get(reverse("scoring"))
    html = r.content.decode()
    assert r.status_code == 200
    headings = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<h2[^>]*>(.*?)</h2>", html)]
    assert headings == ["The score: speedup over torch.compile", "Ties with torch.compile",
                        "Who measures: the trusted judge", "The checks", "Verdicts", "The CPU try-out", "The ruler"]
    ties = html.split('id="ties"')[1].split("<h2")[0]
    assert "tie with torch.compile" in ties and "ranks it at 1.00x" in ties and "2 × standard error" in ties
    assert "median over the rounds" in html and "geometric mean" in html
    flags = section(html, "flag-reasons")
    for code in ("below_floor", "too_fast_vs_compile", "suspicious_source", "no_kernel_launched", "extra_threads",
                 "sanitizer", "gpu_throttled"):
        assert f"<code>{code}</code>" in flags
    assert "clock_disagreement" not in html  # kept for old reports, never raised now
    assert REASON_WORDS["gpu_throttled"] in flags
    rejections = section(html, "reject-reasons")
    for code in ("mismatch", "crash", "timeout", "deferred_write", "no_custom_kernel"):
        assert f"<code>{code}</code>" in rejections and f"<code>{code}</code>" not in flags
    # the task's own bound, from its row (softmax: 1.50x)
    assert re.search(r'Softmax \(fp32\)</a></td><td class="num">1\.50x torch\.compile', section(html, "flag-bounds"))
    assert "1.00 ± 0.03 on a GPU (± 0.15 on the CPU)" in html and "over 25 %" in html
    assert "as this one does" in html  # this test site evaluates on the CPU


def test_the_pages_link_to_it(client, task, owner):
    sub = make_done(task, owner, speedup=1.25)
    scoring = reverse("scoring")
    home = client.get(reverse("home")).content.decode()
    assert f'<a href="{scoring}" id="scoring-link">How scoring works</a> · ' in home
    # the API's page too, from every page's footer and from where a token is made
    assert '<a href="/api/docs" id="api-docs-link">The API</a></footer>' in home
    assert f'<a href="{scoring}">how scoring works</a>' in home
    board = client.get(reverse("task_detail", args=[task.name]) + "?device=cuda:NVIDIA H200").content.decode()
    assert f'href="{scoring}#score" id="board-scoring-link"' in board
    client.force_login(owner)
    result = client.get(reverse("submission_detail", args=[sub.pk])).content.decode()
    assert f'href="{scoring}#score" id="score-link"' in result and f'href="{scoring}#verdicts"' in result
    assert 'id="scoring-link"' in client.get(reverse("upload")).content.decode()
    assert 'href="/api/docs" id="profile-api-docs"' in client.get(reverse("profile")).content.decode()
