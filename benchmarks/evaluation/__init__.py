"""Basil's rerunnable evaluation against the lab's storage physics (issue 11, item 6).

``labtool`` drives the Go command ``build/basil-evaluate`` (lab/cmd/evaluate): it describes a
scenario, measures a placement as vCenter would report it and scores placements against the
physics' ground truth. ``observe`` turns measured counters into Basil's own snapshot with the core's
public types; ``policies`` is the table of what is compared (Basil, the naive latency-greedy policy,
the exhaustive best); ``harness`` runs seeded configurations of each scenario family; ``report``
writes the tables and SVG plots. ``benchmarks/evaluate.py`` is the command (``make evaluate``).
"""
