"""Submit a kernel through the JSON API and wait for its result.

    python -m leaderboard.cli submit FILE --task NAME [--mode test|ranked|profile] [--url URL] [--token KEY]
                                          [--profile-out FILE.ncu-rep]

The token comes from --token or $LEADERBOARD_TOKEN, the site from --url or $LEADERBOARD_URL
(default http://127.0.0.1:8000). Talks HTTP with the standard library only; no Django setup
(a profile is printed by the evaluator's face, standard library too).
Exit status: 0 verified or flagged (or a passing test run), 1 rejected, 3 failed or timed out,
2 usage or API errors.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request

from evaluator import status_word, verdict_word


class ApiError(Exception):
    pass


def _call(method: str, url: str, token: str, body: dict | None = None, *, raw: bool = False):
    """The JSON answer (or with raw=True the body's bytes) of one API call; ApiError otherwise."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", f"Token {token}")
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            body = resp.read()
            return body if raw else json.loads(body)
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read()).get("error") or exc.reason
        except ValueError:
            message = exc.reason
        raise ApiError(f"HTTP {exc.code}: {message}") from None
    except urllib.error.URLError as exc:
        raise ApiError(f"cannot reach {url}: {exc.reason}") from None


def verdict_lines(result: dict) -> list[str]:
    """The verdict in the site's words ("Verified (test run)"), each reason with its code, and the
    two speedups: the head of what this CLI and `manage.py evaluate` print."""
    word = verdict_word(result.get("verdict") or "", result.get("mode") or "ranked",
                        hidden=bool(result.get("hidden")))
    lines = [f"verdict: {word}"]
    lines += [f"  - [{code}] {reason}"
              for code, reason in zip(result.get("reason_codes") or [], result.get("reasons") or [])]
    lines += [f"{key}: {result[key]:.3f}x"
              for key in ("speedup_vs_compile", "speedup_vs_eager") if result.get(key) is not None]
    return lines


def _print_result(sub: dict, out) -> None:
    w = out.write
    w(f"submission #{sub['id']}  task {sub['task']}  mode {sub['mode']}  device {sub['device_type']}\n")
    w(f"status: {status_word(sub['status'])}\n")
    if sub["status"] == "failed":
        w(f"error: {sub.get('error') or 'unknown'}\n")
        return
    for line in verdict_lines(sub):
        w(line + "\n")
    if sub.get("pct_of_floor") is not None:
        w(f"pct_of_floor: {sub['pct_of_floor']:.1f}%\n")
    for row in sub.get("shapes") or []:
        cand = row.get("candidate_ms")
        sp = row.get("speedup_vs_compile")
        w(f"  {json.dumps(row.get('shape'))}: {cand if cand is not None else '-'} ms"
          f"{f', {sp:.3f}x vs compile' if sp else ''}\n")
    failed_tests = [t for t in sub.get("tests") or [] if not t.get("passed")]
    for t in failed_tests:
        w(f"  test {json.dumps(t.get('shape'))} failed: {t.get('message', '')}\n")
    if sub.get("gpu_name"):
        w(f"gpu: {sub['gpu_name']}\n")
    if sub.get("profile"):
        from evaluator import profile_summary

        w("\n".join(profile_summary(sub["profile"])) + "\n")


def submit(args, out=sys.stdout, err=sys.stderr) -> int:
    token = args.token or os.environ.get("LEADERBOARD_TOKEN", "")
    if not token:
        err.write("an API token is needed: --token KEY or $LEADERBOARD_TOKEN (create one on your profile page)\n")
        return 2
    try:
        with open(args.file, "rb") as f:
            raw = f.read()
        source = raw.decode("utf-8")
    except OSError as exc:
        err.write(f"cannot read {args.file}: {exc.strerror}\n")
        return 2
    except UnicodeDecodeError:
        err.write(f"{args.file} is not UTF-8 text\n")
        return 2
    base = args.url.rstrip("/")
    try:
        sub = _call("POST", f"{base}/api/submissions", token,
                    {"task": args.task, "mode": args.mode, "source": source,
                     "filename": os.path.basename(args.file)})
        out.write(f"submitted #{sub['id']} ({status_word(sub['status'])})\n")
        if args.no_wait:
            return 0
        deadline = time.monotonic() + args.timeout
        last = None
        while not sub.get("finished"):
            if time.monotonic() > deadline:
                err.write(f"gave up waiting after {args.timeout} s; status {status_word(sub['status'])}: "
                          f"{sub['url']}\n")
                return 3
            shown = (sub["status"], sub.get("phase"))
            if shown != last:
                out.write(f"  {status_word(sub['status'])}{': ' + sub['phase'] if sub.get('phase') else ''}\n")
                out.flush()
                last = shown
            time.sleep(args.poll)
            sub = _call("GET", sub["url"], token)
    except ApiError as exc:
        err.write(f"error: {exc}\n")
        return 2
    if args.json:
        with open(args.json, "w") as f:
            json.dump(sub, f, indent=2)
    _print_result(sub, out)
    if args.profile_out:
        if not sub.get("profile_file"):
            err.write("no .ncu-rep to save: this run has no Nsight Compute report\n")
        else:
            try:
                data = _call("GET", sub["profile_file"], token, raw=True)
            except ApiError as exc:
                err.write(f"error: {exc}\n")
                return 2
            with open(args.profile_out, "wb") as f:
                f.write(data)
            out.write(f"saved the Nsight Compute report to {args.profile_out} ({len(data)} bytes)\n")
    if sub["status"] == "failed":
        return 3
    return 1 if sub.get("verdict") == "rejected" else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m leaderboard.cli", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("submit", help="submit a kernel and wait for its result")
    p.add_argument("file")
    p.add_argument("--task", required=True)
    p.add_argument("--mode", choices=["test", "ranked", "profile"], default="ranked")
    p.add_argument("--url", default=os.environ.get("LEADERBOARD_URL", "http://127.0.0.1:8000"))
    p.add_argument("--token", default=None)
    p.add_argument("--timeout", type=float, default=1800, help="seconds to wait for the result")
    p.add_argument("--poll", type=float, default=2.0, help="seconds between status checks")
    p.add_argument("--no-wait", action="store_true", help="submit and exit")
    p.add_argument("--json", help="write the final result JSON here")
    p.add_argument("--profile-out", help="profile mode: save the Nsight Compute report (.ncu-rep) here")
    args = parser.parse_args(argv)
    return submit(args)


if __name__ == "__main__":
    sys.exit(main())
