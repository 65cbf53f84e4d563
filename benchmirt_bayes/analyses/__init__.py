"""Analyses layer: benchmark audits, item rankings, subsets, held-out prediction, scoring new LLMs.

Analyses read fits through :mod:`benchmirt_bayes.posterior` and never import the fitting machinery.
"""
