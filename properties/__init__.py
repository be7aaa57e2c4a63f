"""Hypothesis strategies and state machines that hunt for stale Reuse on a real filesystem."""
