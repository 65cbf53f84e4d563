"""Inference layer: ``fit_posterior`` and its samplers, ADVI, minibatch ADVI, identification."""
