"""Workflows that fit many models and analyse them.

Cross-validation, the choice of dimensions and of binary asymptotes, simulation-based
calibration.
"""
