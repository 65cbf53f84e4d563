"""Simulation layer: the BenchMIRT-scale simulator with its truth, streamed cell sources, the built-in set.

Simulators draw responses from the response models of :mod:`benchmirt_bayes.model`.
"""
