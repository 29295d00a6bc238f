"""The trusted side: the judge's evaluation and its phases, the checker (trusted code that runs as
the runner's uid), the baseline runner, the ruler, the sanitizer's and profiler's drivers. Never
imports the submission; the runner's code reaches it only as a command line."""
