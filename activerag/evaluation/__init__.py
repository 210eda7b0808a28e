"""Evaluation: the datasets and the paper's prompts, the metrics, bootstrap statistics, the
evaluation runner, its reports and the sweeps."""
