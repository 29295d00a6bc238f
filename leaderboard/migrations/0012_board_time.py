"""A scored result's board time and noise mark (scoring.board_time), stored with it so that the
boards read no report; the results already stored get theirs from their reports."""
from django.db import migrations, models


def fill(apps, schema_editor):
    from leaderboard.scoring import board_time

    Submission = apps.get_model("leaderboard", "Submission")
    scored = (Submission.objects.filter(mode="ranked", status="done", speedup_vs_compile__isnull=False)
              .exclude(report=None).only("pk", "report").order_by("pk"))
    for sub in scored.iterator(chunk_size=500):
        times = board_time((sub.report or {}).get("shapes"))
        if times["median_ms"] is not None or times["noisy"]:
            Submission.objects.filter(pk=sub.pk).update(median_ms=times["median_ms"], noisy=times["noisy"])


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0011_user_id_index'),
    ]

    operations = [
        migrations.AddField(
            model_name='submission',
            name='median_ms',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='submission',
            name='noisy',
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
