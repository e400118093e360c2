"""Pruning evaluators: manifest summaries, partition tuples and column metrics."""
