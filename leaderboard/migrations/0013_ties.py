"""Ties with torch.compile (scoring.vs_compile): each scored result's word, its interval and the
speedup the boards order by (1.00 for a tie), stored with it; the results already stored get
theirs from their reports and their task's calibration. The boards' indexes follow the new order."""
from django.conf import settings
from django.db import migrations, models


def fill(apps, schema_editor):
    from leaderboard.scoring import tie_fields

    Submission = apps.get_model("leaderboard", "Submission")
    Task = apps.get_model("leaderboard", "Task")
    calibration = dict(Task.objects.values_list("pk", "calibration"))
    scored = (Submission.objects.filter(speedup_vs_compile__isnull=False)
              .only("pk", "task_id", "device_type", "speedup_vs_compile", "report").order_by("pk"))
    for sub in scored.iterator(chunk_size=500):
        fields = tie_fields(speedup=sub.speedup_vs_compile, shapes=(sub.report or {}).get("shapes"),
                            device_type=sub.device_type,
                            calibration=(calibration.get(sub.task_id) or {}).get(sub.device_type))
        Submission.objects.filter(pk=sub.pk).update(**fields)


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0012_board_time'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='submission',
            name='sub_ranked',
        ),
        migrations.RemoveIndex(
            model_name='submission',
            name='sub_task_best',
        ),
        migrations.AddField(
            model_name='submission',
            name='board_speedup',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='submission',
            name='vs_compile',
            field=models.CharField(blank=True, default='', max_length=8),
        ),
        migrations.AddField(
            model_name='submission',
            name='vs_compile_high',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='submission',
            name='vs_compile_low',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name='submission',
            index=models.Index(condition=models.Q(('hidden', False), ('mode', 'ranked'), ('status', 'done'), ('verdict', 'verified')), fields=['task', 'device_type', 'user', '-board_speedup'], name='sub_ranked'),
        ),
        migrations.AddIndex(
            model_name='submission',
            index=models.Index(condition=models.Q(('hidden', False), ('mode', 'ranked'), ('speedup_vs_compile__isnull', False), ('status', 'done'), ('verdict', 'verified')), fields=['task', '-board_speedup', 'created_at'], name='sub_task_best'),
        ),
    ]
