"""Harnesses that break things on purpose (faults, bad inputs, hand-made and random mutants),
or check that a restructuring changed nothing."""
