"""Judging stored boots: the plan, compare (diff, check, history), the timeline, the verdict."""
