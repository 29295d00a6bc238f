"""The CLI at the edges of its use: its output piped into a reader that stops early (`| head -1`),
and a --url that answers but is not this leaderboard (another web server, a server that answers
404 for everything)."""
import os
import re
import subprocess
import sys
import textwrap

import pytest

from leaderboard import services
from leaderboard.models import Submission
from site_helpers import SOURCE, make_done

pytestmark = pytest.mark.django_db(transaction=True)

NOT_THE_API = "does not look like this leaderboard's API"


@pytest.fixture
def key(owner):
    return services.api_token_create(user=owner)[1]


def _env(token=None):
    env = {k: v for k, v in os.environ.items() if k not in ("LEADERBOARD_TOKEN", "LEADERBOARD_URL")}
    if token:
        env["LEADERBOARD_TOKEN"] = token
    return env


def cli(*args, token=None):
    proc = subprocess.run([sys.executable, "-m", "leaderboard.cli", *map(str, args)], capture_output=True,
                          text=True, env=_env(token), timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def into_a_closed_pipe(*args, token=None):
    """Run the CLI with its stdout a pipe whose only reader is gone before the CLI writes: what
    `| head -1` leaves once it has its line. Its exit status and stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "leaderboard.cli", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(token))
    proc.stdout.close()
    err = proc.stderr.read()
    return proc.wait(timeout=60), err


def test_a_reader_that_stops_early_ends_the_cli_quietly(live_server, task, owner, key):
    sub = make_done(task, owner)
    Submission.objects.bulk_create([Submission(user=owner, task=task, device_type="cpu", source=SOURCE,
                                               filename="k.py") for _ in range(100)])
    url = ("--url", live_server.url)
    # show: a few lines, written when the CLI ends; list --limit 100: more than stdout's buffer, so
    # a write in the middle of the table meets the closed pipe
    for args in (("show", sub.pk), ("wait", sub.pk), ("list", "--limit", "100")):
        code, err = into_a_closed_pipe(*args, *url, token=key)
        assert (code, err) == (141, ""), (args, code, err)
    # through a shell, as a user types it
    shell = subprocess.run(["bash", "-c", f'"{sys.executable}" -m leaderboard.cli list --limit 100 --url '
                                          f'{live_server.url} | head -1; echo "status ${{PIPESTATUS[0]}}"'],
                           capture_output=True, text=True, env=_env(key), timeout=60)
    first, status = shell.stdout.splitlines()
    assert first.split()[:3] == ["id", "task", "mode"]
    assert status in ("status 0", "status 141") and shell.stderr == "", shell  # 0: it wrote all before head ended


def _serve(tmp_path, script: str):
    (tmp_path / "server.py").write_text(textwrap.dedent(script))
    server = subprocess.Popen([sys.executable, "-u", "server.py"], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    port = re.search(r"port (\d+)", server.stdout.readline()).group(1)
    return server, f"http://127.0.0.1:{port}"


HTML_404 = """\
    import http.server, os
    os.mkdir("empty"); os.chdir("empty")  # every path answers 404, in HTML
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    print("port", server.server_address[1])
    server.serve_forever()
"""

JSON_404 = """\
    import http.server, json

    class NotFound(http.server.BaseHTTPRequestHandler):
        def answer(self):
            body = json.dumps({"error": "Not found.", "code": "not_found"}).encode()
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = answer

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    print("port", server.server_address[1])
    server.serve_forever()
"""


@pytest.mark.parametrize("script", [HTML_404, JSON_404], ids=["html-404", "json-404"])
def test_an_address_that_answers_404_for_everything_is_not_the_leaderboard(tmp_path, db, script):
    kernel = tmp_path / "k.py"
    kernel.write_text(SOURCE)
    server, url = _serve(tmp_path, script)
    try:
        for args in (("show", "1"), ("wait", "1"), ("list",), ("list", "--task", "softmax"),
                     ("submit", kernel, "--task", "softmax", "--no-wait")):
            code, _, err = cli(*args, "--url", url, token="lb_x")
            assert code == 2 and f"error: {url} {NOT_THE_API}" in err, (args, err)
            assert "no submission" not in err and "Traceback" not in err and len(err.splitlines()) == 1
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_the_leaderboard_itself_still_says_no_such_submission(live_server, task, owner, key):
    code, _, err = cli("show", "999999", "--url", live_server.url + "/", token=key)
    assert code == 2 and "no submission #999999 that you can read" in err and NOT_THE_API not in err
    code, _, err = cli("submit", "nope.py", "--task", "softmax", "--url", live_server.url, token=key)
    assert code == 2 and "cannot read nope.py" in err


def test_the_readme_names_where_the_cli_finds_the_site():
    """The README's CLI section names --url and $LEADERBOARD_URL next to the token's two ways, and
    the CLI's own --help says the same default."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("## From a script: the API and the CLI"):readme.index("An agent's loop")]
    for words in ("--url", "$LEADERBOARD_URL", "export LEADERBOARD_URL=", "--token", "$LEADERBOARD_TOKEN"):
        assert words in section, words
    code, out, _ = cli("show", "--help")
    assert code == 0 and "$LEADERBOARD_URL" in out
