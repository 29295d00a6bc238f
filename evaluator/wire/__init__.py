"""What two processes of one evaluation share: the control channel, CUDA IPC, the runner's user
and privileges, the work directory, the view of /proc, CPU pinning. Used from both sides of a
trust boundary, so it imports neither `judge/` nor `runner/`."""
