"""Small formatting helpers shared by the views: labels for shapes and device types, highlighting."""
from __future__ import annotations

import functools
import re

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer
from django.utils.safestring import mark_safe

from evaluator import status_word, verdict_word


def shape_label(shape: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items())


# "the benchmark is 8192 x 8192" / "the benchmark shapes are B 4, ... and B 1, ..." up to the
# clause or sentence end: the task texts quote the GPU benchmark
_BENCHMARK = re.compile(r"\b(the benchmark(?: shapes?)? (?:is|are)) (.+?)(?=, where|\.\s|\.$|$)", re.S)


def describe_for_device(description: str, bench_shapes: list[str], device_name: str) -> str:
    """The task's text with its benchmark quoted as the board on show runs it."""
    if not bench_shapes:
        return description
    shapes = " and ".join(bench_shapes)
    verb = "shapes are" if len(bench_shapes) > 1 else "shape is"
    text, n = _BENCHMARK.subn(lambda m: f"the benchmark {verb} {shapes} on {device_name}", description, count=1)
    if n:
        return text
    return f"{description} The benchmark {verb} {shapes} on {device_name}."


def badge(submission) -> dict:
    """The verdict badge, in the words of evaluator.verdict_word: a test run that passed reads
    "Verified (test run)" in the grey of a run that never ranks, never the green of a ranked
    result."""
    if not submission.verdict:
        return {"css": submission.status, "text": status_word(submission.status)}
    text = verdict_word(submission.verdict, submission.mode, hidden=submission.hidden)
    if submission.hidden:
        return {"css": "rejected", "text": text}
    if submission.mode in ("test", "profile") and submission.verdict == "verified":
        return {"css": "test", "text": text}
    return {"css": submission.verdict, "text": text}


def device_label(device_type: str) -> str:
    """"cpu" -> "CPU", "cuda:NVIDIA H200" -> "NVIDIA H200"."""
    if device_type == "cpu":
        return "CPU"
    kind, _, name = device_type.partition(":")
    return name or kind.upper()


@functools.lru_cache(maxsize=64)
def _highlight_cached(source: str, marked: tuple[int, ...] = ()) -> str:
    # inline line numbers: one <pre> that scrolls sideways on a narrow screen, where the table
    # layout of linenos="table" made the page wider than the viewport
    formatter = HtmlFormatter(linenos="inline", cssclass="highlight", hl_lines=list(marked), lineanchors="L")
    return highlight(source, PythonLexer(), formatter)


def highlight_python(source: str, marked: list[int] | tuple[int, ...] = ()) -> str:
    """HTML of the source with Pygments (which escapes every character of the code itself);
    `marked` lines get a highlight, each line an anchor #L-<n>."""
    if len(source) <= 16 * 1024:  # task reference code: small and shown on every task page view
        return mark_safe(_highlight_cached(source, tuple(marked)))
    return mark_safe(_highlight_cached.__wrapped__(source, tuple(marked)))


_JSON_ESCAPES = {ord(">"): "\\u003E", ord("<"): "\\u003C", ord("&"): "\\u0026"}


def json_script_raw(json_text: str, element_id: str) -> str:
    """Like Django's json_script, for text that is already JSON (plotly's fig.to_json()):
    escaping <, > and & keeps any string inside from closing the script element."""
    from django.utils.html import format_html

    return format_html(
        '<script id="{}" type="application/json">{}</script>',
        element_id,
        mark_safe(json_text.translate(_JSON_ESCAPES)),
    )
