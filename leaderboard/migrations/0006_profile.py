# Profile mode: the third mode choice and the stored .ncu-rep.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0005_competitions'),
    ]

    operations = [
        migrations.AlterField(
            model_name='submission',
            name='mode',
            field=models.CharField(choices=[('test', 'test (correctness only, never ranked)'), ('ranked', 'ranked (full evaluation)'), ('profile', 'profile (correctness, then your kernel under a profiler; never ranked)')], default='ranked', max_length=8),
        ),
        migrations.CreateModel(
            name='ProfileFile',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('data', models.BinaryField()),
                ('size', models.PositiveIntegerField()),
                ('sha256', models.CharField(max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('submission', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='profile_file', to='leaderboard.submission')),
            ],
        ),
    ]
