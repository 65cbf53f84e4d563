from benchmirt_bayes import write_report
from benchmirt_bayes.reports.report import SECTION_IDS


def sections_in(page):
    return {s for s in SECTION_IDS if f"<section id='{s}'>" in page}


def test_nuts_report_has_every_nuts_section(nuts_fit, tmp_path):
    page = write_report(nuts_fit, tmp_path / "nuts").read_text()
    answers = {"measures", "abilities", "items", "audits"}
    assert sections_in(page) == answers | {"data", "convergence", "summary", "traces", "energy", "ppc"}
    assert page.index("id='measures'") < page.index("id='convergence'")  # the answer before the checks
    for png in ("traces.png", "energy.png", "ppc.png", "benchmarks.png", "item_curves.png"):
        assert (tmp_path / "nuts" / png).stat().st_size > 10_000
        assert f"src='{png}'" in page
    assert "benchmark_loading_spread" in page  # ArviZ summary of hyperparameters
    assert "http" not in page.replace("http-equiv", "")  # readable offline


def test_advi_report_has_the_elbo(advi_fit, tmp_path):
    page = write_report(advi_fit, tmp_path / "advi").read_text()
    assert {
        "measures",
        "abilities",
        "items",
        "audits",
        "data",
        "convergence",
        "summary",
        "ppc",
        "elbo",
    } <= sections_in(page)
    assert "traces" not in sections_in(page)
    summary = page[page.index("id='summary'") : page.index("id='ppc'")]
    assert "r_hat" not in summary and "ess_bulk" not in summary  # no chains to compare in ADVI draws


def test_report_with_restarts_has_the_stability_section(tiny_sim, tmp_path):
    from benchmirt_bayes import fit_posterior

    fit = fit_posterior(
        tiny_sim.responses, 2, method="advi", restarts=2, seed=2, progressbar=False, advi={"draws": 50}
    )
    page = write_report(fit, tmp_path / "r").read_text()
    assert "stability" in sections_in(page)
    assert (tmp_path / "r" / "restart_loadings.png").exists()
    assert "tucker_congruence" in page
