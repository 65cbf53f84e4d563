import numpy as np
import pytest
from scipy.stats import special_ortho_group

from benchmirt_bayes.inference.identification import (
    _identify_in_place,
    alignment_rotations,
    identify_posterior,
)
from benchmirt_bayes.rotations import (
    procrustes,
    sign_and_order,
    symmetric_sqrt_pair,
    tucker_congruence,
    varimax,
    whitened_frame,
)


def random_orthogonal(k, rng):
    q = special_ortho_group.rvs(k, random_state=rng) if k > 1 else np.eye(1)
    if rng.random() < 0.5:
        q[:, 0] *= -1  # include reflections
    return q


def simple_structure(n_items=300, k=2, rng=None):
    rng = rng or np.random.default_rng(0)
    loading = np.zeros((n_items, k))
    for i in range(n_items):
        loading[i, i % k] = rng.uniform(0.8, 2.0)
    return loading + rng.normal(0, 0.1, size=loading.shape)


def test_procrustes_recovers_a_rotation():
    rng = np.random.default_rng(1)
    target = rng.normal(size=(50, 3))
    q = random_orthogonal(3, rng)
    np.testing.assert_allclose(procrustes(target @ q, target), q.T, atol=1e-10)


def test_varimax_finds_simple_structure_from_any_rotation():
    rng = np.random.default_rng(2)
    truth = simple_structure(rng=rng)
    rotated = truth @ random_orthogonal(2, rng)
    recovered = rotated @ varimax(rotated)
    recovered = recovered @ sign_and_order(recovered)
    congruence = np.abs(tucker_congruence(recovered, truth @ sign_and_order(truth)))
    assert congruence.min() > 0.99


def test_alignment_undoes_per_draw_rotations_and_keeps_every_prediction():
    rng = np.random.default_rng(3)
    n_chain, n_draw, n_llm, k = 2, 40, 30, 2
    truth_loading = simple_structure(200, k, rng)
    truth_ability = rng.normal(size=(n_llm, k))
    loading = np.empty((n_chain, n_draw, 200, k))
    ability = np.empty((n_chain, n_draw, n_llm, k))
    for c in range(n_chain):
        for d in range(n_draw):
            q = random_orthogonal(k, rng)
            loading[c, d] = (truth_loading + rng.normal(0, 0.05, truth_loading.shape)) @ q
            ability[c, d] = (truth_ability + rng.normal(0, 0.05, truth_ability.shape)) @ q
    import xarray as xr

    posterior = xr.Dataset(
        {
            "loading": (("chain", "draw", "item", "dimension"), loading),
            "ability": (("chain", "draw", "llm", "dimension"), ability),
            "intercept": (("chain", "draw", "item"), rng.normal(size=(n_chain, n_draw, 200))),
        }
    )
    before = np.einsum("cdjk,cdik->cdji", ability, loading)
    raw_loading = loading.copy()
    aligned = identify_posterior(posterior, rotate=True)
    np.testing.assert_array_equal(posterior["loading"].values, raw_loading)  # input untouched
    after = np.einsum("cdjk,cdik->cdji", aligned["ability"].values, aligned["loading"].values)
    assert np.max(np.abs(after - before)) < 1e-8  # every predicted logit unchanged
    # draws now agree with each other (small spread) and with the truth up to sign/order
    mean = aligned["loading"].mean(("chain", "draw")).values
    spread = aligned["loading"].std(("chain", "draw")).values
    assert spread.max() < 0.2
    congruence = np.abs(tucker_congruence(mean, truth_loading @ sign_and_order(truth_loading)))
    assert congruence.min() > 0.99
    np.testing.assert_allclose(aligned["mdisc"].values, np.linalg.norm(loading, axis=-1))
    np.testing.assert_allclose(
        aligned["difficulty"].values, -posterior["intercept"].values / aligned["mdisc"].values
    )


def test_in_place_identification_matches_the_copying_one_even_on_read_only_draws():
    import xarray as xr

    rng = np.random.default_rng(4)
    loading = rng.normal(size=(2, 30, 50, 2))
    ability = rng.normal(size=(2, 30, 20, 2))
    loading.setflags(write=False)  # as pm.sample's PyMC and numpyro traces can come back
    posterior = xr.Dataset(
        {
            "loading": (("chain", "draw", "item", "dimension"), loading),
            "ability": (("chain", "draw", "llm", "dimension"), ability),
            "intercept": (("chain", "draw", "item"), rng.normal(size=(2, 30, 50))),
        }
    )
    copied = identify_posterior(posterior, rotate=True)
    in_place = _identify_in_place(posterior.copy(), rotate=True)
    xr.testing.assert_allclose(copied, in_place)
    assert np.shares_memory(in_place["ability"].values, ability)  # rotated where it lay
    assert not np.shares_memory(in_place["loading"].values, loading)  # read-only: copied


def test_sign_convention_makes_defining_items_positive():
    loading = -simple_structure()
    fixed = loading @ sign_and_order(loading)
    main = np.argmax(np.abs(fixed), axis=1)
    for k in range(2):
        assert fixed[main == k, k].mean() > 0


def test_order_is_by_explained_variance():
    loading = simple_structure() * np.array([0.5, 2.0])
    fixed = loading @ sign_and_order(loading)
    assert (fixed**2).sum(0)[0] > (fixed**2).sum(0)[1]


def test_confirmatory_alignment_only_flips_signs():
    rng = np.random.default_rng(4)
    base = simple_structure(100, 2, rng)
    draws = np.stack([base * rng.choice([-1, 1], size=2) for _ in range(20)])
    rotations = alignment_rotations(draws, rotate=False)
    for r in rotations:
        assert np.allclose(np.abs(r), np.eye(2))
    aligned = np.einsum("sik,skl->sil", draws, rotations)
    assert np.allclose(aligned, aligned[0])


def test_reference_alignment():
    rng = np.random.default_rng(5)
    reference = simple_structure(100, 3, rng)
    q = random_orthogonal(3, rng)
    rotations = alignment_rotations((reference @ q)[None], reference=reference)
    np.testing.assert_allclose((reference @ q) @ rotations[0], reference, atol=1e-10)


@pytest.mark.parametrize("k", [1, 3])
def test_alignment_works_for_other_dimensions(k):
    rng = np.random.default_rng(6)
    truth = simple_structure(120, k, rng)
    draws = np.stack([truth @ random_orthogonal(k, rng) for _ in range(10)])
    rotations = alignment_rotations(draws)
    aligned = np.einsum("sik,skl->sil", draws, rotations)
    assert np.max(np.abs(aligned - aligned[0])) < 1e-8


def test_whitened_frame_keeps_every_prediction_and_whitens():
    rng = np.random.default_rng(4)
    ability = rng.multivariate_normal([0, 0], [[1.0, 0.6], [0.6, 2.0]], size=80)
    ability -= ability.mean(axis=0)
    loading = simple_structure(50, 2, rng)
    white_ability, white_loading = whitened_frame(ability, loading)
    np.testing.assert_allclose(white_ability @ white_loading.T, ability @ loading.T, atol=1e-10)
    np.testing.assert_allclose(np.cov(white_ability, rowvar=False), np.eye(2), atol=1e-10)


def test_symmetric_sqrt_pair_squares_to_the_matrix_and_inverts_it():
    rng = np.random.default_rng(3)
    factor = rng.normal(size=(4, 4))
    matrix = factor @ factor.T + 0.1 * np.eye(4)
    sqrt, inv_sqrt = symmetric_sqrt_pair(matrix)
    np.testing.assert_allclose(sqrt, sqrt.T, atol=1e-12)
    np.testing.assert_allclose(sqrt @ sqrt, matrix, atol=1e-10)
    np.testing.assert_allclose(sqrt @ inv_sqrt, np.eye(4), atol=1e-10)
