"""Model layer: specs, response models (the one place for response probabilities), the PyMC model, kernels."""
