# Each queued row's place in line (services.pipeline.fair_order) reads its user's latest start;
# the home page and the API's task list read each task's best ranked result.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0008_idempotency_key'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='submission',
            index=models.Index(condition=models.Q(('started_at__isnull', False)), fields=['user', '-started_at'],
                               name='sub_user_started'),
        ),
        migrations.AddIndex(
            model_name='submission',
            index=models.Index(condition=models.Q(('hidden', False), ('mode', 'ranked'), ('speedup_vs_compile__isnull', False),
                                                  ('status', 'done'), ('verdict', 'verified')),
                               fields=['task', '-speedup_vs_compile', 'created_at'], name='sub_task_best'),
        ),
    ]
