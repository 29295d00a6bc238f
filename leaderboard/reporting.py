"""What error reports may show. Django masks settings named like KEY, SECRET, PASS or TOKEN; the
connection URLs (DATABASE_URL, REDIS_URL, CELERY_BROKER_URL) carry passwords under other names."""
import re

from django.views.debug import SafeExceptionReporterFilter


class MaskingReporterFilter(SafeExceptionReporterFilter):
    hidden_settings = re.compile(
        "API|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL|DSN|BROKER|DATABASES|AUTH", flags=re.I
    )
