"""The fixed start of the tests that run under a stopped clock (competitions: opening, closing,
late uploads). The `at` fixture (tests/conftest.py) stands the clock some hours after it."""
from datetime import datetime, timezone

T0 = datetime(2030, 3, 1, 12, 0, tzinfo=timezone.utc)
