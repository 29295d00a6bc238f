"""Moments in time as <time> elements: the server writes UTC, static/js/localtime.js rewrites the
text into the visitor's own time zone (the datetime attribute keeps the exact instant)."""
from __future__ import annotations

from datetime import timezone as dt_timezone

from django import template
from django.utils.html import format_html

register = template.Library()


@register.filter
def moment(value):
    """<time datetime="2026-03-01T12:00:00Z">2026-03-01 12:00 UTC</time>; "–" for none."""
    if not value:
        return "–"
    utc = value.astimezone(dt_timezone.utc)
    return format_html('<time datetime="{}">{} UTC</time>', utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
                       utc.strftime("%Y-%m-%d %H:%M"))


def span_words(seconds: float) -> str:
    """A span of time in words, down to the minute: "2 d 3 h", "3 h 5 min", "42 s"."""
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


@register.filter
def iso_utc(value) -> str:
    return value.astimezone(dt_timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if value else ""
