"""Accuracy: predictions against measured benchmarks (validate) and the calibration fit."""
