"""Workflows that fit many models and analyse them: cross-validation and the choice of dimensions."""
