"""Submit kernels and read their results through the JSON API.

    python -m leaderboard.cli submit FILE --task NAME [--mode test|ranked|profile] [--no-wait]
                                          [--timeout S] [--json OUT] [--profile-out FILE.ncu-rep]
    python -m leaderboard.cli list [--task NAME] [--limit N]
    python -m leaderboard.cli show ID
    python -m leaderboard.cli wait ID [--timeout S]

Every command takes --url URL and --token KEY. The token comes from --token or
$LEADERBOARD_TOKEN, the site from --url or $LEADERBOARD_URL (default http://127.0.0.1:8000).
`show` and `wait` read a public submission without a token too. `submit` sends its upload under
an Idempotency-Key of its own, and sends it again under the same key when the answer is lost, so
that it never makes two submissions of one file. Talks HTTP with the standard library only; no
Django setup (a profile is printed by the evaluator's face, standard library too).

Exit status:
  submit  0 verified or flagged (or a passing test run), 1 rejected, 3 failed or timed out
  wait    0 verified, 1 rejected, 3 failed or timed out, 4 flagged (waiting for an admin's review)
  list, show  0
  every command: 2 usage or API errors (no token, a bad id, the site unreachable, an address that
  is not the leaderboard's API), 130 Ctrl-C, 141 the output's reader went away (`| head -1`)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.parse
import uuid

from evaluator import status_word
from leaderboard.client.http import ApiError
from leaderboard.client.http import call as _call
from leaderboard.client.output import list_lines, print_result

EXIT_VERIFIED, EXIT_REJECTED, EXIT_ERROR, EXIT_FAILED, EXIT_FLAGGED, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
# the reader of the output went away (`cli list | head -1`): 128 + SIGPIPE, the status the shell
# shows for any other command of a pipeline cut short that way (`seq 1000000 | head -1` under
# pipefail). Not 0: the output was not all read, and `wait`'s status (the verdict) was not seen
# with it; a script that wants 0 there reads the whole output or leaves pipefail off.
EXIT_PIPE_CLOSED = 141
NEED_TOKEN = "an API token is needed: --token KEY or $LEADERBOARD_TOKEN (create one on your profile page)"
PAGE_MAX = 100  # the API's largest page (views.PAGE_SIZE_MAX)
# an upload whose answer is lost is sent again, this many times in all, under one Idempotency-Key
UPLOAD_ATTEMPTS = 3


def _token(args) -> str:
    return args.token or os.environ.get("LEADERBOARD_TOKEN", "")


def _base(args) -> str:
    return args.url.rstrip("/")


def _progress_line(sub: dict) -> str:
    """"Running: timing round 3 of about 9"; a phase that starts with the status says it alone
    ("queued, 3rd in line" -> "Queued, 3rd in line")."""
    word, phase = status_word(sub["status"]), sub.get("phase") or ""
    if phase.lower().startswith(sub["status"]):
        return word + phase[len(sub["status"]):]
    return f"{word}: {phase}" if phase else word


def _follow(sub: dict, url: str, token: str, args, out, err) -> dict | None:
    """Ask until the submission is finished, printing its status and phase each time they change;
    None when the time is up (said on err). Each request is `?wait=<poll>` (whole seconds): the
    site answers it as soon as the submission finishes (no lag at the end) or after that many
    seconds with the phase then; an answer sooner than that for an unfinished one (a site that does
    not wait, a poll under a second) is followed by a sleep for the rest."""
    deadline = time.monotonic() + args.timeout
    last = None
    while not sub.get("finished"):
        if time.monotonic() > deadline:
            err.write(f"gave up waiting after {args.timeout:g} s; status {status_word(sub['status'])}: "
                      f"`python -m leaderboard.cli wait {sub['id']}` goes on waiting\n")
            return None
        shown = (sub["status"], sub.get("phase"))
        if shown != last:
            out.write(f"  {_progress_line(sub)}\n")
            out.flush()
            last = shown
        asked, hold = time.monotonic(), int(args.poll)  # whole seconds; under one, a plain look
        sub = _call("GET", f"{url}?wait={hold}" if hold else url, token)
        if not sub.get("finished"):
            time.sleep(max(0.0, args.poll - (time.monotonic() - asked)))
    return sub


def _upload(url: str, token: str, body: dict, err) -> dict:
    """POST one upload, and again when its answer is lost (UPLOAD_ATTEMPTS in all), always under
    the one Idempotency-Key of this invocation: the site answers a repeat with the submission the
    first request made, so a retry never makes a second one."""
    headers = {"Idempotency-Key": str(uuid.uuid4())}
    for attempt in range(1, UPLOAD_ATTEMPTS):
        try:
            return _call("POST", url, token, body, headers=headers)
        except ApiError as exc:
            if not exc.lost:
                raise
            err.write(f"no answer to the upload ({exc}); sending it again under the same Idempotency-Key\n")
            time.sleep(attempt)
    return _call("POST", url, token, body, headers=headers)


def submit(args, out=sys.stdout, err=sys.stderr) -> int:
    token = _token(args)
    if not token:
        err.write(f"error: {NEED_TOKEN}\n")
        return EXIT_ERROR
    try:
        with open(args.file, "rb") as f:
            raw = f.read()
        source = raw.decode("utf-8")
    except OSError as exc:
        err.write(f"error: cannot read {args.file}: {exc.strerror}\n")
        return EXIT_ERROR
    except UnicodeDecodeError:
        err.write(f"error: {args.file} is not UTF-8 text\n")
        return EXIT_ERROR
    try:
        sub = _upload(f"{_base(args)}/api/submissions", token,
                      {"task": args.task, "mode": args.mode, "source": source,
                       "filename": os.path.basename(args.file)}, err)
        out.write(f"submitted #{sub['id']} ({status_word(sub['status'])})\n")
        if args.no_wait:
            return EXIT_VERIFIED
        sub = _follow(sub, sub["url"], token, args, out, err)
    except ApiError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_ERROR
    if sub is None:
        return EXIT_FAILED
    if args.json:
        with open(args.json, "w") as f:
            json.dump(sub, f, indent=2)
    print_result(sub, out)
    if args.profile_out:
        if not sub.get("profile_file"):
            err.write("no .ncu-rep to save: this run has no Nsight Compute report\n")
        else:
            try:
                data = _call("GET", sub["profile_file"], token, raw=True)
            except ApiError as exc:
                err.write(f"error: {exc}\n")
                return EXIT_ERROR
            with open(args.profile_out, "wb") as f:
                f.write(data)
            out.write(f"saved the Nsight Compute report to {args.profile_out} ({len(data)} bytes)\n")
    if sub["status"] == "failed":
        return EXIT_FAILED
    return EXIT_REJECTED if sub.get("verdict") == "rejected" else EXIT_VERIFIED


def list_submissions(args, out=sys.stdout, err=sys.stderr) -> int:
    """Your submissions, newest first, --limit of them (pages of the API as needed)."""
    token = _token(args)
    if not token:
        err.write(f"error: {NEED_TOKEN}\n")
        return EXIT_ERROR
    query = f"per_page={min(args.limit, PAGE_MAX)}"
    if args.task:
        query += "&task=" + urllib.parse.quote(args.task)
    results, url, count = [], f"{_base(args)}/api/submissions?{query}", 0
    try:
        try:
            while url and len(results) < args.limit:
                page = _call("GET", url, token)
                results += page["results"]
                count, url = page["count"], page["next"]
        except ApiError as exc:
            if not (args.task and exc.status == 404):
                raise
            tasks = [t["name"] for t in _call("GET", f"{_base(args)}/api/tasks", token)["tasks"]]
            err.write(f"error: no task named {args.task!r}; the tasks: {', '.join(tasks)}\n")
            return EXIT_ERROR
    except ApiError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_ERROR
    if not results:
        out.write(f"no submissions{' for ' + args.task if args.task else ''} yet\n")
        return EXIT_VERIFIED
    for line in list_lines(results[:args.limit]):
        out.write(line + "\n")
    if count > args.limit:
        out.write(f"the newest {args.limit} of {count}: --limit N shows more\n")
    return EXIT_VERIFIED


def _fetch_one(args, token: str, err) -> dict | None:
    """The submission ID as the API shows it to this token, or None with the reason on err."""
    url = f"{_base(args)}/api/submissions/{args.id}"
    try:
        return _call("GET", url, token)
    except ApiError as exc:
        if exc.status == 401 and not token:
            err.write(f"error: submission #{args.id} is not public: {NEED_TOKEN}\n")
        elif exc.status == 404:
            err.write(f"error: no submission #{args.id} that you can read "
                      "(`python -m leaderboard.cli list` shows yours)\n")
        else:
            err.write(f"error: {exc}\n")
        return None


def show(args, out=sys.stdout, err=sys.stderr) -> int:
    sub = _fetch_one(args, _token(args), err)
    if sub is None:
        return EXIT_ERROR
    print_result(sub, out)
    return EXIT_VERIFIED


def wait(args, out=sys.stdout, err=sys.stderr) -> int:
    """Follow one submission to its result, then print it as `show` does; the exit status says
    the verdict (the module's docstring)."""
    token = _token(args)
    sub = _fetch_one(args, token, err)
    if sub is None:
        return EXIT_ERROR
    try:
        sub = _follow(sub, f"{_base(args)}/api/submissions/{args.id}", token, args, out, err)
    except ApiError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_ERROR
    if sub is None:
        return EXIT_FAILED
    print_result(sub, out)
    if sub["status"] == "failed":
        return EXIT_FAILED
    return {"verified": EXIT_VERIFIED, "rejected": EXIT_REJECTED, "flagged": EXIT_FLAGGED}.get(
        sub.get("verdict"), EXIT_FAILED)


def _submission_id(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 2**63:
        raise argparse.ArgumentTypeError(f"{text!r} is not a submission number such as 12 "
                                         "(`python -m leaderboard.cli list` shows yours)")
    return int(text)


def _site_url(text: str) -> str:
    if not text.startswith(("http://", "https://")) or not text.split("://", 1)[1].strip("/"):
        raise argparse.ArgumentTypeError(f"{text!r} is not the site's address, such as http://127.0.0.1:8000")
    return text


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def parser() -> argparse.ArgumentParser:
    site = argparse.ArgumentParser(add_help=False)
    site.add_argument("--url", type=_site_url, default=os.environ.get("LEADERBOARD_URL", "http://127.0.0.1:8000"),
                      help="the site (default $LEADERBOARD_URL or http://127.0.0.1:8000)")
    site.add_argument("--token", default=None, help="an API token (default $LEADERBOARD_TOKEN)")
    waiting = argparse.ArgumentParser(add_help=False)
    waiting.add_argument("--timeout", type=_seconds, default=1800, help="seconds to wait for the result")
    waiting.add_argument("--poll", type=_seconds, default=2.0, help="seconds between two looks at the phase; the result is shown as soon as it is in")

    top = argparse.ArgumentParser(prog="python -m leaderboard.cli", description=__doc__.split("\n")[0],
                                  epilog=__doc__[__doc__.index("Exit status:"):],
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = top.add_subparsers(dest="command", required=True)
    p = commands.add_parser("submit", parents=[site, waiting], help="submit a kernel and wait for its result")
    p.add_argument("file")
    p.add_argument("--task", required=True)
    p.add_argument("--mode", choices=["test", "ranked", "profile"], default="ranked")
    p.add_argument("--no-wait", action="store_true", help="submit and exit")
    p.add_argument("--json", help="write the final result JSON here")
    p.add_argument("--profile-out", help="profile mode: save the Nsight Compute report (.ncu-rep) here")
    p.set_defaults(run=submit)
    p = commands.add_parser("list", parents=[site], help="your submissions, newest first")
    p.add_argument("--task", help="only this task's")
    p.add_argument("--limit", type=_positive, default=20, help="how many (default 20)")
    p.set_defaults(run=list_submissions)
    p = commands.add_parser("show", parents=[site], help="one submission: verdict, reasons, per-shape times")
    p.add_argument("id", type=_submission_id, metavar="ID")
    p.set_defaults(run=show)
    p = commands.add_parser("wait", parents=[site, waiting],
                            help="follow a submission's phases to its result (exit status: the verdict)")
    p.add_argument("id", type=_submission_id, metavar="ID")
    p.set_defaults(run=wait)
    return top


def _output_closed() -> int:
    """stdout's (or stderr's) reader is gone: both go to /dev/null, so that the interpreter's last
    flush of what is still buffered meets no closed pipe (and prints no "Exception ignored"), and
    the CLI ends quietly. Python ignores SIGPIPE, so a write met EPIPE instead of ending it; the
    CLI keeps it ignored, since its sockets rely on EPIPE (an upload whose answer is lost)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.dup2(devnull, sys.stderr.fileno())
    return EXIT_PIPE_CLOSED


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        code = args.run(args)
        sys.stdout.flush()  # here, not at exit, so a closed pipe is met where it is caught
        return code
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted; whatever was submitted goes on being evaluated on the site\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the API's calls catch their own (client/http.py): this is stdout or stderr
        return _output_closed()


if __name__ == "__main__":
    sys.exit(main())
