"""Sphinx configuration of the API reference (built from the numpydoc docstrings).

Build with ``python -m sphinx -W --keep-going -b html docs/api docs/api/_build``.
"""

import benchmirt_bayes

project = "benchmirt_bayes"
release = version = benchmirt_bayes.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "numpydoc"]
autosummary_generate = True
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_title = f"benchmirt_bayes {release} API reference"
