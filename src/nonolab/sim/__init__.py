"""Study simulator: synthetic Nonogram studies in the public study's file format.

Modules by job: :mod:`~nonolab.sim.model` (parameters, gap mixture, puzzles, rating model),
:mod:`~nonolab.sim.attempt` (one attempt's moves), :mod:`~nonolab.sim.events` (a whole study's
events, surveys and truth), :mod:`~nonolab.sim.faults` (bad log lines),
:mod:`~nonolab.sim.writer` (the study folder), :mod:`~nonolab.sim.recovery` (parameter
recovery) and :mod:`~nonolab.sim.power` (power of the design).
"""
