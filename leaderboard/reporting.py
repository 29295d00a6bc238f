"""What error reports and logs may show. Django masks settings named like KEY, SECRET, PASS or
TOKEN; the connection URLs (DATABASE_URL, REDIS_URL, CELERY_BROKER_URL) carry passwords under other
names, and an exception's message may quote any of them."""
import logging
import re

from django.views.debug import SafeExceptionReporterFilter


class MaskingReporterFilter(SafeExceptionReporterFilter):
    hidden_settings = re.compile(
        "API|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL|DSN|BROKER|DATABASES|AUTH", flags=re.I
    )


# user:password@ in any URL: the password goes, the rest stays readable
URL_CREDENTIALS = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]*:)([^@\s]+)(@)", re.I)


def _secret_values() -> list[str]:
    from urllib.parse import unquote, urlparse

    from django.conf import settings

    values = [getattr(settings, "SECRET_KEY", "")]
    values += [db.get("PASSWORD", "") for db in getattr(settings, "DATABASES", {}).values()]
    for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"):
        password = urlparse(getattr(settings, name, "") or "").password
        if password:
            values += [password, unquote(password)]
    # short values would blank ordinary words out of every line
    return sorted({v for v in values if v and len(v) >= 4}, key=len, reverse=True)


def redact(text: str) -> str:
    """The text with URL passwords and the site's own secrets replaced by ***."""
    if not text:
        return text
    text = URL_CREDENTIALS.sub(r"\1***\3", text)
    try:
        secret_values = _secret_values()
    except Exception:  # settings not configured (a bare import): the URL rule above still holds
        secret_values = []
    for value in secret_values:
        text = text.replace(value, "***")
    return text


class RedactingFilter(logging.Filter):
    """On every handler: log lines (and the tracebacks under them) never carry a secret, whatever
    an exception's message happened to quote."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True
