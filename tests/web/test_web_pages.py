"""The pages render what the selectors return, escape untrusted text, and use no CDN."""
import json
import re
from pathlib import Path

from django.conf import settings
from django.urls import reverse

from leaderboard import services
from leaderboard.models import Submission

from leaderboard.web import pagecache
from web_helpers import H200, make_done

XSS = "<script>alert(1)</script>"


def test_home_lists_tasks_with_best_speedup_and_count(client, task, owner, other):
    make_done(task, owner, speedup=1.25)
    make_done(task, other, speedup=1.5, verdict="flagged", reasons=["too fast"], codes=["too_fast_vs_compile"])
    r = client.get(reverse("home"))
    html = r.content.decode()
    assert r.status_code == 200
    assert task.title in html
    row = re.search(r'<tr>.*?%s.*?</tr>' % re.escape(task.title), html, re.S).group(0)
    assert "1.25x" in row and "on NVIDIA H200" in row  # the flagged 1.5 does not count; the device named
    # the count says what it counts: every evaluation of every mode, and the verified ranked among them
    count = re.search(r'<td class="num submissions">(.*?)</td>', row, re.S).group(1)
    assert " ".join(re.sub(r"<[^>]+>", " ", count).split()) == "2 evaluations (all modes), 1 verified ranked"


def test_home_counts_test_profile_and_rejected_runs_as_evaluations_and_only_ranking_ones_as_ranked(client, task,
                                                                                                   owner, other):
    make_done(task, owner, speedup=1.25)
    make_done(task, owner, mode="test")
    make_done(task, owner, mode="profile")
    make_done(task, other, verdict="rejected", codes=["crash"], reasons=["crashed"])
    html = client.get(reverse("home")).content.decode()
    count = re.search(r'<td class="num submissions">(.*?)</td>', html, re.S).group(1)
    assert " ".join(re.sub(r"<[^>]+>", " ", count).split()) == "4 evaluations (all modes), 1 verified ranked"
    assert ">Evaluations</th>" in html
    api = client.get("/api/tasks").json()["tasks"][0]
    assert (api["submissions"], api["verified_ranked"]) == (4, 1)


def test_home_says_where_uploads_are_evaluated(client, db):
    html = client.get(reverse("home")).content.decode()
    assert re.search(r'<p id="runs-on">Uploads here are evaluated on <strong>CPU</strong>\. That is a try-out', html)


def test_a_gpu_host_opens_on_its_gpu(client, settings, task, owner):
    """`make run` on a GPU host gives the web server its plan's env (leaderboard/launch.py): the
    home page and the boards are the GPU's, even while the CPU board has the only results."""
    from leaderboard import launch

    make_done(task, owner, speedup=0.01, device_type="cpu")
    for name, value in launch.plan(launch.parse_gpus("0, NVIDIA H200, GPU-5b1c\n")).env.items():
        setattr(settings, name, value)
    pagecache.clear()
    home = client.get(reverse("home")).content.decode()
    assert re.search(r'<p id="runs-on">Uploads here are evaluated on <strong>NVIDIA H200</strong>', home)
    board = client.get(reverse("task_detail", args=[task.name])).content.decode()
    assert re.search(r'class="current" aria-current="true">NVIDIA H200<', board)


def test_home_sees_a_new_result_at_once(client, task, owner):
    assert "no verified result yet" in client.get(reverse("home")).content.decode()
    make_done(task, owner, speedup=1.1)
    assert "1.10x" in client.get(reverse("home")).content.decode()


def test_task_page_shows_the_task(client, task):
    r = client.get(reverse("task_detail", args=[task.name]) + "?device=cuda:NVIDIA H200")
    html = r.content.decode()
    assert r.status_code == 200
    assert "def custom_kernel(x: torch.Tensor)" in html
    assert 'class="highlight"' in html  # the reference, highlighted
    assert "M=8192, N=8192" in html  # the H200 benchmark shape and its floor
    floor = task.floors_for(H200)[0]["floor_ms"]
    assert f"{floor:.3g} ms" in html
    assert f"atol = {task.tolerance['atol']:g}" in html and f"rtol = {task.tolerance['rtol']:g}" in html
    assert "M=7, N=131" in html



def test_transformer_blocks_page_shows_the_helper_its_reference_calls(client, db):
    """The reference is `return _block(...)`: the page shows `_block` (and its constants) too."""
    from evaluator.tasks import get_task
    from leaderboard import services

    services.task_sync(spec=get_task("transformer_block"))
    html = client.get(reverse("task_detail", args=["transformer_block"])).content.decode()
    heading = html.index("Reference (what your kernel must match and beat)")
    shown = re.sub(r"<[^>]+>", "", html[heading:html.index("Test shapes", heading)])
    assert "def _block(x, w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down):" in shown
    assert "HEAD_DIM = 128" in shown and "scaled_dot_product_attention" in shown
    assert shown.index("def _block") < shown.index("def reference")

def test_task_page_ranks_best_per_user_by_speedup_over_compile(client, task, owner, other, staff):
    make_done(task, owner, speedup=1.1, days_ago=3)
    make_done(task, owner, speedup=1.3, days_ago=2)
    make_done(task, other, speedup=1.2, days_ago=1)
    make_done(task, staff, speedup=1.9, verdict="flagged")  # not ranked until approved
    html = client.get(reverse("task_detail", args=[task.name])).content.decode()
    table = re.search(r'<table id="leaderboard">.*?</table>', html, re.S).group(0)
    users = re.findall(r"<td>(?:<a [^>]*>)?(owner|other|staff)", table)
    assert users == ["owner", "other"]
    assert "1.30x" in table and "1.10x" not in table
    assert "2.34x" in table  # over eager
    assert "NVIDIA H200" in table


def test_task_page_has_one_leaderboard_per_device_type(client, task, owner, other):
    make_done(task, owner, speedup=1.4)  # H200
    make_done(task, other, speedup=1.1, device_type="cpu")
    url = reverse("task_detail", args=[task.name])
    cpu = client.get(url + "?device=cpu").content.decode()
    gpu = client.get(url + "?device=cuda:NVIDIA H200").content.decode()
    board = lambda html: re.search(r'<table id="leaderboard">.*?</table>', html, re.S).group(0)
    assert "owner" in board(gpu) and "other" not in board(gpu)
    assert "other" in board(cpu) and "owner" not in board(cpu)
    assert 'href="?device=cpu"' in gpu and 'href="?device=cuda%3ANVIDIA%20H200"' in gpu
    assert client.get(url + "?device=tpu").status_code == 404


def test_the_default_board_is_a_device_with_workers_or_results(client, settings, task, owner):
    """A CPU-only site opens on the CPU board; a device with results only elsewhere opens there."""
    url = reverse("task_detail", args=[task.name])
    current = lambda html: re.search(r'class="current" aria-current="true">([^<]+)<', html).group(1)
    assert current(client.get(url).content.decode()) == "CPU"  # nothing anywhere: this site's workers
    make_done(task, owner, speedup=1.4)  # H200 only
    assert current(client.get(url).content.decode()) == "NVIDIA H200"
    make_done(task, owner, speedup=0.01, device_type="cpu")
    assert current(client.get(url).content.decode()) == "CPU"  # this site's device has results
    settings.WORKER_DEVICE, settings.WORKER_GPU_NAME = "cuda", "NVIDIA H200"
    pagecache.clear()  # a site's device type is fixed while it runs; the cache keys on data only
    assert current(client.get(url).content.decode()) == "NVIDIA H200"


def test_the_task_text_quotes_the_benchmark_of_the_board_on_show(client, task, owner):
    url = reverse("task_detail", args=[task.name])
    description = lambda html: re.search(r'<p id="description">(.*?)</p>', html, re.S).group(1)
    cpu = client.get(url + "?device=cpu").content.decode()
    gpu = client.get(url + "?device=cuda:NVIDIA H200").content.decode()
    assert "M=256, N=1024 on CPU" in description(cpu) and "8192" not in description(cpu)
    assert "M=8192, N=8192 on NVIDIA H200" in description(gpu)
    assert 'id="tryout"' in cpu and "interpreter timings" in cpu and 'id="tryout"' not in gpu
    assert "Leaderboard on CPU" in cpu and "Leaderboard on NVIDIA H200" in gpu


def test_every_figure_names_its_device(client, task, owner):
    make_done(task, owner, speedup=0.01, device_type="cpu")
    html = client.get(reverse("task_detail", args=[task.name]) + "?device=cpu").content.decode()
    titles = re.findall(r"<h3>([^<]*)</h3>\s*<div class=\"chart\"", html)
    assert len(titles) == 3 and all(t.endswith("on CPU") for t in titles), titles


def test_task_page_embeds_plotly_figures_built_server_side(client, task, owner, other):
    make_done(task, owner, speedup=1.4)
    make_done(task, other, speedup=1.2)
    html = client.get(reverse("task_detail", args=[task.name])).content.decode()
    figures = dict(re.findall(r'<script id="(chart-[a-z]+)-data" type="application/json">(.*?)</script>', html, re.S))
    assert set(figures) == {"chart-top", "chart-history", "chart-floor"}
    top = json.loads(figures["chart-top"])
    assert top["data"][0]["type"] == "scatter"  # dots on stems from 1x: a bar on a log axis starts nowhere
    assert top["data"][0]["x"] == ["owner", "other"]
    assert top["data"][0]["y"] == [1.4, 1.2]
    history = json.loads(figures["chart-history"])
    assert history["data"][0]["type"] == "scatter" and len(history["data"][0]["y"]) == 2
    floor = json.loads(figures["chart-floor"])
    assert floor["data"][0]["y"] == [0.15, 0.15]
    assert "vendor/plotly/plotly.min.js" in html


def test_task_page_without_results_has_no_charts(client, task):
    html = client.get(reverse("task_detail", args=[task.name])).content.decode()
    assert "No verified ranked submission" in html
    assert "plotly.min.js" not in html


def test_banned_users_leave_the_leaderboard(client, task, owner, other, staff):
    make_done(task, owner, speedup=1.4)
    make_done(task, other, speedup=1.2)
    url = reverse("task_detail", args=[task.name])
    assert "owner" in client.get(url).content.decode()
    services.user_ban(user=owner, actor=staff, reason="cheating")
    html = client.get(url).content.decode()
    board = re.search(r'<table id="leaderboard">.*?</table>', html, re.S).group(0)
    assert "owner" not in board and "other" in board


def test_an_approved_flagged_result_appears_on_the_leaderboard(client, task, owner, staff):
    sub = make_done(task, owner, speedup=1.9, verdict="flagged", reasons=["suspiciously fast"], codes=["too_fast_vs_compile"])
    url = reverse("task_detail", args=[task.name])
    assert "1.90x" not in client.get(url).content.decode()
    services.submission_approve(submission=sub, actor=staff, reason="looked at it")
    assert "1.90x" in client.get(url).content.decode()


def test_submission_page_shows_the_whole_result(client, task, owner, staff):
    sub = make_done(task, owner, speedup=1.9, verdict="flagged",
                    reasons=["faster than 1.5x torch.compile"], codes=["too_fast_vs_compile"])
    services.submission_approve(submission=sub, actor=staff, reason="reviewed the code")
    client.force_login(owner)
    html = client.get(reverse("submission_detail", args=[sub.pk])).content.decode()
    assert 'class="highlight"' in html and "custom_kernel" in html
    assert "Faster than 1.5x torch.compile." in html and "too_fast_vs_compile" in html
    shapes = re.search(r'<table id="shapes">.*?</table>', html, re.S).group(0)
    for value in ("M=8192, N=8192", "0.150 ms", "0.270 ms", "0.285 ms", "0.126 ms", "83.8 %", "1.90x"):
        assert value in shapes
    assert "NVIDIA H200" in html and "2.11.0" in html and "3.6.0" in html
    audit = re.search(r'<table id="audit">.*?</table>', html, re.S).group(0)
    assert "approve" in audit and "staff" in audit and "reviewed the code" in audit
    assert "runner said hi" in html
    assert "hx-get" not in html  # done: nothing polls


def test_a_running_submission_polls_its_status(client, task, owner):
    sub = Submission.objects.create(user=owner, task=task, source="def custom_kernel(x): pass\n",
                                    celery_task_id="t")
    services.submission_claim(submission_id=sub.pk, worker="w")
    client.force_login(owner)
    html = client.get(reverse("submission_detail", args=[sub.pk])).content.decode()
    status_url = reverse("submission_status", args=[sub.pk])
    assert f'hx-get="{status_url}"' in html and 'hx-trigger="every 2s"' in html
    assert "vendor/htmx/htmx.min.js" in html
    assert '<meta http-equiv="refresh"' in html  # without JavaScript the page reloads itself
    partial = client.get(status_url).content.decode()
    assert partial.lstrip().startswith('<section id="result"')
    assert "running" in partial and "starting sandbox" in partial
    assert "<html" not in partial


def test_untrusted_text_is_escaped(client, task, owner):
    sub = make_done(task, owner, verdict="rejected", reasons=[XSS], codes=["crash"], logs=XSS)
    Submission.objects.filter(pk=sub.pk).update(source=f"# {XSS}\ndef custom_kernel(x):\n    return x\n",
                                                filename=f"{XSS}.py")
    client.force_login(owner)
    for name in ("submission_detail", "submission_status"):
        html = client.get(reverse(name, args=[sub.pk])).content.decode()
        assert XSS not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_chart_json_cannot_close_its_script_element(client, task, owner):
    from leaderboard.web.present import json_script_raw

    out = json_script_raw(json.dumps({"t": "</script><script>alert(1)</script>"}), "x")
    assert out.count("</script>") == 1
    assert json.loads(re.search(r">(.*)</script>", out).group(1))["t"].startswith("</script>")


def test_profile_lists_ones_own_submissions(client, task, owner, other):
    mine = make_done(task, owner)
    theirs = make_done(task, other)
    client.force_login(owner)
    html = client.get(reverse("profile")).content.decode()
    assert reverse("submission_detail", args=[mine.pk]) in html
    assert reverse("submission_detail", args=[theirs.pk]) not in html


def test_profile_creates_an_api_token_shown_once_post_redirect_get(client, owner, db):
    from leaderboard.models import ApiToken

    client.force_login(owner)
    r = client.post(reverse("token_create"), {"name": "laptop"})
    assert r.status_code == 302 and r["Location"] == reverse("profile")
    shown = client.get(reverse("profile")).content.decode()
    key = re.search(r'<p class="token-once" id="new-token">([^<]+)</p>', shown).group(1)
    assert services.api_token_authenticate(key=key) == owner
    again = client.get(reverse("profile")).content.decode()  # a reload: no key, no second token
    assert key not in again and "laptop" in again
    assert ApiToken.objects.filter(user=owner).count() == 1


def test_signup_logs_the_new_user_in(client, db):
    r = client.post(reverse("signup"), {"username": "newbie", "password1": "a-long-pass-phrase-9",
                                        "password2": "a-long-pass-phrase-9"})
    assert r.status_code == 302
    assert client.get(reverse("profile")).status_code == 200


def test_login_page_logs_in(client, owner):
    r = client.post(reverse("login"), {"username": "owner", "password": "pw-owner-1234"})
    assert r.status_code == 302 and r["Location"] == reverse("home")


def test_no_template_loads_anything_from_a_cdn():
    pattern = re.compile(r"""(src|href)\s*=\s*["']?(https?:)?//""", re.I)
    found = []
    roots = [Path(settings.BASE_DIR, "templates"), Path(settings.BASE_DIR, "leaderboard", "templates")]
    for path in (p for root in roots for p in root.rglob("*.html")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line) or re.search(r"cdn|unpkg|jsdelivr|cdnjs", line, re.I):
                found.append(f"{path}:{n}: {line.strip()}")
    assert not found, found


def test_vendored_libraries_are_there_with_licences():
    vendor = Path(settings.BASE_DIR, "static", "vendor")
    for lib, file in (("plotly", "plotly.min.js"), ("htmx", "htmx.min.js")):
        assert (vendor / lib / file).stat().st_size > 10_000
        assert (vendor / lib / "LICENSE").exists()


def test_pages_show_a_change_within_the_fingerprint_age(client, settings, task, owner):
    settings.WEB_FINGERPRINT_MAX_AGE_S = 3600
    assert "no verified result yet" in client.get(reverse("home")).content.decode()
    make_done(task, owner, speedup=1.1)
    assert "no verified result yet" in client.get(reverse("home")).content.decode()  # within the age
    settings.WEB_FINGERPRINT_MAX_AGE_S = 0
    assert "1.10x" in client.get(reverse("home")).content.decode()


def test_a_failed_submission_says_why_and_stops_polling(client, task, owner):
    sub = Submission.objects.create(user=owner, task=task, source="def custom_kernel(x): pass\n", celery_task_id="t")
    claimed = services.submission_claim(submission_id=sub.pk, worker="w")
    services.submission_fail(submission=claimed, error="Sandbox error: <docker> is not running")
    client.force_login(owner)
    html = client.get(reverse("submission_detail", args=[sub.pk])).content.decode()
    assert 'data-status="failed"' in html and "hx-get" not in html
    assert "Sandbox error: &lt;docker&gt; is not running" in html


def test_a_test_mode_result_has_no_timing_table(client, task, owner):
    sub = make_done(task, owner, mode="test", device_type="cpu")
    client.force_login(owner)
    html = client.get(reverse("submission_detail", args=[sub.pk])).content.decode()
    assert 'id="shapes"' not in html and 'id="tests"' in html
    assert "Speedup over torch.compile" not in html


def test_submission_page_marks_a_noisy_timing_run(client, task, owner):
    sub = make_done(task, owner, speedup=1.1)
    row = sub.report["shapes"][0]
    row.update(candidate_p10_ms=0.14, candidate_p90_ms=0.16, eager_p10_ms=0.26, eager_p90_ms=0.28,
               compile_p10_ms=0.15, compile_p90_ms=0.17)
    sub.save()
    client.force_login(owner)
    url = reverse("submission_detail", args=[sub.pk])
    shapes = re.search(r'<table id="shapes">.*?</table>', client.get(url).content.decode(), re.S).group(0)
    assert "13 %" in shapes and "noisy run" not in shapes  # widest band: 0.02 / 0.15
    row["candidate_p90_ms"] = 0.21
    sub.save()
    shapes = re.search(r'<table id="shapes">.*?</table>', client.get(url).content.decode(), re.S).group(0)
    assert "47 %" in shapes and "noisy run" in shapes


def test_a_cpu_only_site_offers_no_gpu_tab_until_a_gpu_result_arrives(client, settings, task, owner):
    """The task has H200 floors, but a board tab is for device types with results or workers."""
    url = reverse("task_detail", args=[task.name])
    tabs = lambda html: re.findall(r'<a href="\?device=[^"]*"[^>]*>([^<]+)</a>', html)
    assert "cuda:NVIDIA H200" in task.floors
    assert tabs(client.get(url).content.decode()) == ["CPU"]
    # the H200 board (its floors, its empty table) is still there for a link to it
    gpu = client.get(url + "?device=cuda:NVIDIA H200").content.decode()
    assert tabs(gpu) == ["CPU", "NVIDIA H200"] and "Leaderboard on NVIDIA H200" in gpu
    make_done(task, owner, speedup=1.4)  # H200
    pagecache.clear()
    assert tabs(client.get(url).content.decode()) == ["NVIDIA H200", "CPU"]
    settings.WORKER_DEVICE, settings.WORKER_GPU_NAME = "cuda", "NVIDIA H100"
    pagecache.clear()
    assert tabs(client.get(url).content.decode()) == ["NVIDIA H100", "NVIDIA H200"]
