"""Readers of the benchmark tools' own result files (aiperf, `vllm bench serve`, guidellm,
MLPerf loadgen): each maps one file to tool-neutral `BenchPoint`s (readers/common.py)."""
