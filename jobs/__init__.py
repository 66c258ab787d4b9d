"""Queued work: one abstract model, one queue and one sweeper for every job the workers run."""
