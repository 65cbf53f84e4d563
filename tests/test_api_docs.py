"""The API reference builds from the numpydoc docstrings with warnings as errors."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import benchmirt_bayes

DOCS = Path(__file__).resolve().parent.parent / "docs" / "api"


def test_every_public_name_is_in_the_api_reference():
    text = (DOCS / "index.rst").read_text()
    listed = {line.strip() for line in text.splitlines() if line.startswith("   ") and ":" not in line}
    assert set(benchmirt_bayes.__all__) <= listed, set(benchmirt_bayes.__all__) - listed


@pytest.mark.slow
def test_api_reference_builds_without_warnings(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(DOCS, source, ignore=shutil.ignore_patterns("_build", "generated"))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            str(source),
            str(tmp_path / "html"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    page = (tmp_path / "html" / "generated" / "benchmirt_bayes.fit_posterior.html").read_text()
    assert "Parameters" in page and "seed" in page
