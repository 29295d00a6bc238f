"""Template filters that print measured numbers to the digits that mean something.

A median of timed calls is good to two or three significant digits at best; printing it with a
fixed number of decimals shows 0.0000 for a fast shape and 23 digits of noise for an error.
"""
from __future__ import annotations

import math

from django import template
from django.utils.html import format_html

from evaluator import significant as evaluator_significant

register = template.Library()

DASH = "–"


# below this a number is written with an exponent whatever its digits: one column of a page
# (the max abs errors of the tests, times of a few microseconds) never mixes 0.0000017 with 1.2e-07
SMALL = 1e-4


def significant(value, digits: int = 3) -> str:
    """`value` to `digits` significant digits (evaluator.significant: the logs and the command
    lines write numbers the same way); a dash for none. Under 1e-4 always with an exponent
    (1.7e-06, 1.2e-07), as the CLI writes them, where evaluator.significant's switch to one
    depends on the digits asked for."""
    if value is None or isinstance(value, bool):
        return DASH
    try:
        v = float(value)
    except (TypeError, ValueError):
        return DASH
    if v != 0 and math.isfinite(v) and abs(float(f"{v:.{max(digits, 1) - 1}e}")) < SMALL:
        return f"{v:.{max(digits, 1) - 1}e}"
    return evaluator_significant(v, digits)


@register.filter
def sig(value, digits=3):
    return significant(value, int(digits))


@register.filter
def ms(value):
    """A time in milliseconds: "0.0210 ms"."""
    text = significant(value, 3)
    return text if text == DASH else f"{text} ms"


@register.filter
def speedup(value):
    """A speedup: "1.25x"."""
    text = significant(value, 3)
    return text if text == DASH else f"{text}x"


@register.filter
def pct(value, digits=2):
    """A share in per cent: "84 %", "2.1 %"."""
    text = significant(value, int(digits))
    return text if text == DASH else f"{text} %"


@register.filter
def seconds(value):
    """A duration: "42 s", "3 min 5 s", "2 h 4 min"."""
    if value is None:
        return DASH
    s = max(0, int(round(float(value))))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


# what a page says of a result's standing against torch.compile (scoring.vs_compile)
VS_COMPILE_WORDS = {"faster": "faster", "tie": "tie with torch.compile", "slower": "slower"}


@register.simple_tag
def vs_compile(word, low=None, high=None):
    """The mark beside a speedup over torch.compile: a "faster" badge only when the whole interval
    is above 1.00, "tie with torch.compile" when it contains 1.00, "slower" below it; nothing for
    a result stored without the rule's word. The interval is the mark's title."""
    if word not in VS_COMPILE_WORDS:
        return ""
    title = "within the ruler's noise of torch.compile" if word == "tie" else f"{word} than torch.compile by more than the ruler's noise"
    if low is not None and high is not None:
        title += f": {significant(low)}x to {significant(high)}x"
    kind = "badge faster" if word == "faster" else word
    return format_html('<span class="vs-compile {}" data-vs-compile="{}" title="{}">{}</span>',
                       kind, word, title, VS_COMPILE_WORDS[word])
