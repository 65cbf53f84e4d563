"""Reports layer: figures and the HTML trace report."""
