"""Data layer: the response matrix, loaders for published result formats, the real sets in ../shared/data."""
