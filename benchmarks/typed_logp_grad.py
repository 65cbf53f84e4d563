"""One log density + gradient of a graded and of a continuous model against hand-written NumPy.

The package's side is the whole compiled PyMC model (priors, hierarchy and likelihood, as
NUTS evaluates it, C back end); the NumPy side is the likelihood alone, written out by hand
and vectorised over the dense matrix with its gradients with respect to abilities,
loadings, intercepts and the type's own parameters. The binary row is the same comparison
as ``harness.py --configs logp_grad``. Prints a table; asserts nothing.

    python benchmarks/typed_logp_grad.py            # S: 100 LLMs × 606 items
    python benchmarks/typed_logp_grad.py --smoke    # seconds
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import time
from datetime import UTC, datetime

import numpy as np
from scipy.special import digamma, expit, gammaln

from benchmirt_bayes import build_model, simulate_benchmirt
from benchmirt_bayes.simulation.simulate import DESIGN


def time_call(fn, repeats: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats * 1000


def package_ms(responses, repeats: int) -> float:
    model = build_model(responses, 2, likelihood="auto")
    point = model.initial_point(random_seed=0)
    fn = model.logp_dlogp_function(ravel_inputs=True)
    fn.set_extra_values({})
    x = np.concatenate([np.ravel(point[v.name]) for v in fn._grad_vars])
    return time_call(lambda: fn(x), repeats)


def numpy_binary(y, mask, ability, loading, intercept, rng):
    def run():
        eta = ability @ loading.T + intercept
        p = expit(eta)
        logp = np.sum(mask * (y * eta - np.logaddexp(0, eta)))
        resid = mask * (y - p)
        return logp, resid @ loading, resid.T @ ability, resid.sum(axis=0)

    return run


def numpy_graded(y, mask, ability, loading, intercept, rng, categories=4):
    cuts = np.sort(rng.normal(size=(loading.shape[0], categories - 1)), axis=1)
    bounded = np.concatenate(
        [np.full((len(cuts), 1), -np.inf), cuts, np.full((len(cuts), 1), np.inf)], axis=1
    )
    y = y.astype(np.int64)
    cols = np.broadcast_to(np.arange(y.shape[1]), y.shape)

    def run():
        eta = ability @ loading.T + intercept
        lower, upper = bounded[cols, y], bounded[cols, y + 1]
        sa, sb = expit(eta - lower), expit(eta - upper)
        prob = sa - sb
        logp = np.sum(mask * np.log(prob))
        resid = mask * (1.0 - sa - sb)
        d_lower = mask * (-sa * (1 - sa) / prob)
        d_upper = mask * (sb * (1 - sb) / prob)
        grad_cuts = np.stack(
            [((y == k) * d_lower).sum(0) + ((y == k - 1) * d_upper).sum(0) for k in range(1, categories)],
            axis=1,
        )
        return logp, resid @ loading, resid.T @ ability, resid.sum(axis=0), grad_cuts

    return run


def numpy_continuous(y, mask, ability, loading, intercept, rng, kappa=(-1.5, 1.5), phi=8.0):
    k0, k1 = kappa
    part = (y > 0).astype(int) + (y >= 1).astype(int)
    inside = part == 1
    safe = np.where(inside, y, 0.5)
    logit_y = np.log(safe) - np.log1p(-safe)

    def run():
        eta = ability @ loading.T + intercept
        lower = np.where(part == 0, -np.inf, np.where(part == 1, k0, k1))
        upper = np.where(part == 0, k0, np.where(part == 1, k1, np.inf))
        sa, sb = expit(eta - lower), expit(eta - upper)
        prob = sa - sb
        mu = expit(eta)
        alpha, beta = mu * phi, (1 - mu) * phi
        beta_ll = (
            (alpha - 1) * np.log(safe)
            + (beta - 1) * np.log1p(-safe)
            + gammaln(phi)
            - gammaln(alpha)
            - gammaln(beta)
        )
        logp = np.sum(mask * (np.log(prob) + inside * beta_ll))
        d_mu = phi * (logit_y - digamma(alpha) + digamma(beta))
        resid = mask * (1.0 - sa - sb + inside * d_mu * mu * (1 - mu))
        d_lower = mask * (-sa * (1 - sa) / prob)
        d_upper = mask * (sb * (1 - sb) / prob)
        grad_k0 = np.sum(np.where(part == 1, d_lower, 0) + np.where(part == 0, d_upper, 0))
        grad_k1 = np.sum(np.where(part == 2, d_lower, 0) + np.where(part == 1, d_upper, 0))
        d_phi = inside * (
            mu * np.log(safe)
            + (1 - mu) * np.log1p(-safe)
            + digamma(phi)
            - mu * digamma(alpha)
            - (1 - mu) * digamma(beta)
        )
        grad_phi = np.sum(mask * d_phi)
        return logp, resid @ loading, resid.T @ ability, resid.sum(axis=0), grad_k0, grad_k1, grad_phi

    return run


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    scale, n_llms, repeats = (0.002, 20, 3) if args.smoke else (0.0175, 100, args.repeats)
    benchmarks = sorted({d.benchmark for d in DESIGN})
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(f"# typed logp+grad, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, commit {commit}")
    print("| type | LLMs × items | package (ms) | NumPy likelihood (ms) | ratio |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for kind, writer in (
        ("binary", numpy_binary),
        ("graded", numpy_graded),
        ("continuous", numpy_continuous),
    ):
        types = None if kind == "binary" else dict.fromkeys(benchmarks, kind)
        responses = simulate_benchmirt(scale=scale, n_llms=n_llms, seed=7, response_types=types).responses
        n_llm, n_item = responses.values.shape
        ability, loading = rng.normal(size=(n_llm, 2)), rng.normal(size=(n_item, 2)) * 0.5
        intercept = rng.normal(size=n_item)
        y, mask = np.nan_to_num(responses.values), responses.observed.astype(float)
        ours = package_ms(responses, repeats)
        theirs = time_call(writer(y, mask, ability, loading, intercept, rng), repeats)
        print(f"| {kind} | {n_llm} × {n_item} | {ours:.2f} | {theirs:.2f} | {ours / theirs:.2f} |")


if __name__ == "__main__":
    main()
