"""Sandbox tests: real Docker engine, real bubblewrap and the real `python -m evaluator run`
inside the box; every hostile test on both backends.

Without an engine / bwrap a test skips on a developer's machine and FAILS under CI=true.
"""
from __future__ import annotations

import pytest

import sandbox
from sandbox_helpers import IN_CI


@pytest.fixture(params=["docker", "bwrap"], scope="module")
def backend(request):
    """Each backend in turn. Missing: skip here, FAIL under CI=true."""
    return _ready(request.param)


def _ready(name: str) -> str:
    reason = sandbox.BACKENDS[name].unavailable_reason()
    if reason:
        (pytest.fail if IN_CI else pytest.skip)(f"{name} backend: {reason}")
    return name


@pytest.fixture
def docker_ready():
    return _ready("docker")


@pytest.fixture
def bwrap_ready():
    return _ready("bwrap")
