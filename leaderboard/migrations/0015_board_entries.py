"""The boards' read model (models.BoardEntry), built from the submissions already there."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber


def build(apps, schema_editor):
    """Each user's best ranked result per task and device type, as selectors.RANKED, NOT_BANNED
    and BEST_FIRST say at this migration (services.boards.boards_rebuild does the same later)."""
    Submission = apps.get_model("leaderboard", "Submission")
    BoardEntry = apps.get_model("leaderboard", "BoardEntry")
    best = (Submission.objects.filter(mode="ranked", status="done", verdict="verified", hidden=False,
                                      speedup_vs_compile__isnull=False)
            .filter(~Q(user__profile__banned=True))
            .annotate(row=Window(RowNumber(), partition_by=[F("task_id"), F("device_type"), F("user_id")],
                                 order_by=[F("board_speedup").desc(), F("created_at").asc(), F("pk").asc()]))
            .filter(row=1).values_list("task_id", "device_type", "user_id", "pk"))
    BoardEntry.objects.bulk_create([BoardEntry(task_id=t, device_type=d, user_id=u, submission_id=s)
                                    for t, d, u, s in best], batch_size=2000)


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0014_task_catalog'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='BoardEntry',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('device_type', models.CharField(max_length=64)),
                ('submission', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='board_entries', to='leaderboard.submission')),
                ('task', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='leaderboard.task')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name_plural': 'board entries',
                'constraints': [models.UniqueConstraint(fields=('task', 'device_type', 'user'), name='one_board_entry_per_user')],
            },
        ),
        migrations.RunPython(build, migrations.RunPython.noop),
    ]
