"""The lab's benchmarks, run from the checkout's root as modules (`python -m
benchmarks.cost.flare_cost`), using only activerag's public names (tests/test_lab_scripts.py):

- cost/: what a method or component costs, in LM calls, tokens, seconds, memory;
- quality/: studies of what a method or setting achieves beside the evaluation harness
  (ceilings, thresholds, bits per byte, tool-call rates);
- robustness/: harnesses that break things on purpose (faults, bad inputs, hand-made and
  random mutants) or check that a restructuring changed nothing.

publish.py, shared by all three, writes a benchmark's Markdown table."""
