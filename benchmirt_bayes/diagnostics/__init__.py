"""Diagnostics layer: convergence of one fit and stability across restarts."""
