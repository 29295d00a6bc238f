"""Small formatting helpers shared by the views: labels for shapes and device types, highlighting."""
from __future__ import annotations

import functools

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer
from django.utils.safestring import mark_safe


def shape_label(shape: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items())


def device_label(device_type: str) -> str:
    """"cpu" -> "CPU", "cuda:NVIDIA H200" -> "NVIDIA H200"."""
    if device_type == "cpu":
        return "CPU"
    kind, _, name = device_type.partition(":")
    return name or kind.upper()


@functools.lru_cache(maxsize=64)
def _highlight_cached(source: str) -> str:
    return highlight(source, PythonLexer(), HtmlFormatter(linenos="table", cssclass="highlight"))


def highlight_python(source: str) -> str:
    """HTML of the source with Pygments; Pygments escapes every character of the code itself."""
    if len(source) <= 16 * 1024:  # task reference code: small and shown on every task page view
        return mark_safe(_highlight_cached(source))
    return mark_safe(highlight(source, PythonLexer(), HtmlFormatter(linenos="table", cssclass="highlight")))


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
