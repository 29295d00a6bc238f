"""User names that pass for another on the boards.

Unicode's confusables data (TS 39), through confusable_homoglyphs (a maintained package, the one
django-registration uses), decides which characters look alike. Two rules:

- a name that mixes scripts and holds a character that can pass for one of another script
  (`аlice` with a Cyrillic а) is refused outright, whatever names exist;
- a name whose every character is the same as, or looks like, the character at its place in an
  existing name (`AIice` beside `Alice`, `аlісе` in Cyrillic beside `alice`) is refused.

Lookalikes that change the length (`rn` for `m`) are not compared.
"""
from __future__ import annotations

from functools import lru_cache

from confusable_homoglyphs import confusables
from django.contrib.auth import get_user_model
from django.db.models.functions import Length


@lru_cache(maxsize=4096)
def _looks(char: str) -> frozenset[str]:
    """The character and those Unicode lists as confusable with it."""
    found = confusables.is_confusable(char, greedy=True)
    return frozenset({char}.union(h["c"] for h in found[0]["homoglyphs"]) if found else {char})


def _alike(a: str, b: str) -> bool:
    return a.casefold() == b.casefold() or bool(_looks(a) & _looks(b))


def looks_like(name: str, other: str) -> bool:
    return len(name) == len(other) and all(_alike(a, b) for a, b in zip(name, other))


def mixes_confusable_scripts(name: str) -> bool:
    return bool(confusables.is_dangerous(name))


def lookalike_of(name: str) -> str | None:
    """An existing user name that `name` passes for, or None. Only names of the same length can
    match, so only those are read."""
    user_model = get_user_model()
    field = user_model.USERNAME_FIELD
    others = (user_model.objects.annotate(name_length=Length(field)).filter(name_length=len(name))
              .values_list(field, flat=True).iterator())
    return next((other for other in others if looks_like(name, other)), None)
