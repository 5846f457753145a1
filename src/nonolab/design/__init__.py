"""Designing the next study: puzzle selection, balanced schedules, power by simulation, plans."""
