"""What the "answers" cache (Redis: leaderboard/web/pagecache.py, leaderboard/api/owncache.py) holds
for the running test, which has a key prefix of its own (tests/conftest.py)."""


def kept_keys() -> list[str]:
    """The keys kept for this test, as the site named them (without the cache's prefix)."""
    import redis
    from django.conf import settings

    from leaderboard.web import pagecache

    conf = settings.CACHES["answers"]
    prefix = f"{conf['KEY_PREFIX']}:{pagecache._version['n']}:"  # Django's key: prefix, version, key
    client = redis.Redis.from_url(conf["LOCATION"])
    try:
        return sorted(key.decode()[len(prefix):] for key in client.scan_iter(match=prefix + "*", count=1000))
    finally:
        client.close()
