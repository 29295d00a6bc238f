"""What a hostile visitor meets on a running site (docs/bench/hostile-visitor.md): slow request
bodies against the pages, a spoofed X-Forwarded-For against the sign-up limit, a flood of
password resets for one address, and unread query parameters against the public caches.

    make run                                          # in a fresh clone, in another terminal
    .venv/bin/python bench/hostile_visitor.py --url http://127.0.0.1:8000 --json OUT.json

It creates accounts and uses up this address's sign-up and password-reset limits for an hour: run
it against a site of your own, never a deployment. Each part prints one line; --json writes them
all. Traffic goes to --url only; every loop is bounded in count and time.
"""
from __future__ import annotations

import argparse
import json
import re
import secrets
import socket
import statistics
import time
import urllib.parse

import requests

SLOW_FORMS = 20
SLOW_CHUNKED = 8


def slow_client(url: str, path: str, chunked: bool) -> socket.socket:
    """Headers, then one byte of the body; the rest never comes."""
    parts = urllib.parse.urlsplit(url)
    s = socket.create_connection((parts.hostname, parts.port or 80), timeout=10)
    framing = "Transfer-Encoding: chunked" if chunked else "Content-Length: 1000"
    s.sendall((f"POST {path} HTTP/1.1\r\nHost: {parts.hostname}\r\nCookie: csrftoken={'a' * 32}\r\n"
               f"Content-Type: application/x-www-form-urlencoded\r\n{framing}\r\n\r\n").encode())
    s.sendall(b"1\r\na\r\n" if chunked else b"a")
    return s


def status_line(s: socket.socket, timeout: float) -> str:
    s.settimeout(timeout)
    try:
        got = s.recv(200)
    except OSError as e:
        return f"no answer ({type(e).__name__})"
    return got.split(b"\r\n", 1)[0].decode("latin-1") or "closed"


def slow_bodies(url: str) -> dict:
    """SLOW_FORMS login forms and SLOW_CHUNKED chunked API uploads that never finish, then the
    login page, /healthz and the task list timed while they hang, then what the slow clients hear."""
    clients = [slow_client(url, "/accounts/login/", False) for _ in range(SLOW_FORMS)]
    clients += [slow_client(url, "/api/submissions", True) for _ in range(SLOW_CHUNKED)]
    time.sleep(1.0)
    times = {}
    try:
        for path in ("/accounts/login/", "/healthz", "/api/tasks") * 3:
            t = time.monotonic()
            try:
                code = requests.get(url + path, timeout=10).status_code
            except requests.RequestException as e:
                code = type(e).__name__
            times.setdefault(path, []).append((code, round(time.monotonic() - t, 3)))
        heard = {"form": status_line(clients[0], 40), "chunked": status_line(clients[-1], 40)}
    finally:
        for c in clients:
            c.close()
    worst = max(s for answers in times.values() for _, s in answers)
    return {"part": "slow_bodies", "slow_clients": len(clients), "answers": times, "worst_s": worst,
            "all_200": all(c == 200 for answers in times.values() for c, _ in answers), "slow_clients_heard": heard}


def signup(url: str, username: str, forwarded: str | None) -> int:
    with requests.Session() as browser:
        page = browser.get(url + "/accounts/signup/", timeout=10).text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        password = "a-long-pass-phrase-" + secrets.token_hex(4)
        headers = {"X-Forwarded-For": forwarded} if forwarded else {}
        return browser.post(url + "/accounts/signup/", data={
            "csrfmiddlewaretoken": token, "username": username, "password1": password, "password2": password},
            headers=headers, allow_redirects=False, timeout=10).status_code


def signups(url: str, n: int = 8) -> dict:
    """n sign-ups from fresh sessions, each claiming another address in X-Forwarded-For."""
    tag = secrets.token_hex(3)
    codes = [signup(url, f"visitor{tag}{i}", f"203.0.113.{i + 1}") for i in range(n)]
    return {"part": "signups", "codes": codes, "made": codes.count(302), "refused": codes.count(429)}


def resets(url: str, n: int = 10) -> dict:
    """n password-reset requests for one address, each from a fresh session."""
    codes = []
    for _ in range(n):
        with requests.Session() as browser:
            page = browser.get(url + "/accounts/password-reset/", timeout=10).text
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
            codes.append(browser.post(url + "/accounts/password-reset/", data={
                "csrfmiddlewaretoken": token, "email": "someone@example.com"}, allow_redirects=False,
                timeout=10).status_code)
    return {"part": "password_resets", "codes": codes, "accepted": codes.count(302), "refused": codes.count(429)}


def unread_params(url: str, n: int = 30) -> dict:
    """A board and a page with n random unread parameters, against the same without: medians."""
    tasks = requests.get(url + "/api/tasks", timeout=10).json()["tasks"]
    name = tasks[0]["name"]
    out = {"part": "unread_params", "task": name}
    for label, path in (("api_board", f"/api/tasks/{name}/leaderboard"), ("task_page", f"/tasks/{name}/")):
        plain, random_ = [], []
        for _ in range(n):
            t = time.monotonic()
            requests.get(url + path, timeout=10)
            plain.append(time.monotonic() - t)
            t = time.monotonic()
            requests.get(url + path + "?x=" + secrets.token_hex(8), timeout=10)
            random_.append(time.monotonic() - t)
        out[label] = {"plain_median_ms": round(statistics.median(plain) * 1e3, 2),
                      "random_median_ms": round(statistics.median(random_) * 1e3, 2)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for part in (slow_bodies, unread_params, signups, resets):
        row = part(args.url)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
