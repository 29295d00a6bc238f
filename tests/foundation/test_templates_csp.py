"""The templates keep to the Content-Security-Policy (script-src 'self'): scripts come from
static files only; no inline script, no inline event handler, no javascript: URL."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = sorted((ROOT / "templates").rglob("*.html")) + sorted((ROOT / "leaderboard").rglob("templates/**/*.html"))

SCRIPT_TAG = re.compile(r"<script\b([^>]*)>", re.I)
HANDLER = re.compile(r"\son[a-z]+\s*=", re.I)


def test_templates_have_no_inline_script():
    assert TEMPLATES
    problems = []
    for path in TEMPLATES:
        text = path.read_text()
        for match in SCRIPT_TAG.finditer(text):
            attrs = match.group(1)
            # a script with src, or a data block (json_script) that the browser never runs
            if "src=" not in attrs and "application/json" not in attrs:
                problems.append(f"{path.relative_to(ROOT)}: inline <script{attrs}>")
        if HANDLER.search(text):
            problems.append(f"{path.relative_to(ROOT)}: inline event handler")
        if "javascript:" in text.lower():
            problems.append(f"{path.relative_to(ROOT)}: javascript: URL")
    assert not problems, problems
