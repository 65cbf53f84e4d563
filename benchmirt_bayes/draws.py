"""The per-draw core: thinned posterior draws of every parameter, in the data's order.

Every analysis that works draw by draw (prediction, scoring new LLMs, information, person
and item fit, differential functioning, comparisons) reads a fit through one
:class:`PosteriorDraws`: a seeded subsample of the posterior draws with the item parameters
(loadings, intercepts and each response type's own) and, when asked, the fitted LLMs'
abilities, aligned to the data's item and LLM order, with the response layout that turns a
linear predictor into expected scores, log-likelihoods and information. The same seed picks
the same draws whatever is asked for, so analyses made with one seed pair up draw by draw.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import xarray as xr

from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.model.layout import ItemParameters, ResponseLayout
from benchmirt_bayes.posterior import (
    TYPE_PARAMETER_VARIABLES,
    fit_spec,
    response_layout,
    responses_from_tree,
    thinned_draws,
    type_parameters,
)
from benchmirt_bayes.response_types.base import information_matrix, linear_predictor


@dataclass(frozen=True)
class PosteriorDraws:
    """Thinned posterior draws of a fit's parameters, aligned to one item (and LLM) order.

    Attributes
    ----------
    items
        Item ids, the order of every item axis.
    dimensions
        Names of the latent dimensions.
    loading
        ``(draw, item, dimension)``.
    intercept
        ``(draw, item)``.
    params
        The non-binary types' item parameters, ``(draw, item, …)`` (empty for binary data).
    layout
        The response type of every item.
    ability_prior_cov
        ``(dimension, dimension)`` prior covariance of a new LLM's abilities.
    llms
        LLM ids of :attr:`ability` (empty without abilities).
    ability
        ``(draw, llm, dimension)`` the fitted LLMs' abilities (``None`` unless asked for).
    responses
        The data the fit was made on (``None`` for a bare posterior).
    extra
        Further thinned variables asked for (same draws), such as ``benchmark_loading_mean``.

    """

    items: np.ndarray
    dimensions: list[str]
    loading: np.ndarray
    intercept: np.ndarray
    params: ItemParameters
    layout: ResponseLayout
    ability_prior_cov: np.ndarray
    llms: np.ndarray
    ability: np.ndarray | None
    responses: ResponseMatrix | None
    extra: xr.Dataset

    @classmethod
    def from_posterior(
        cls,
        posterior: xr.DataTree,
        n_draws: int | None = 100,
        *,
        seed: int = 0,
        abilities: bool = False,
        responses: ResponseMatrix | None = None,
        extra: Sequence[str] = (),
    ) -> PosteriorDraws:
        """Thin a fit's posterior.

        Parameters
        ----------
        posterior
            A fit.
        n_draws
            Draws kept (a seeded subsample; all when the fit has fewer, or ``None``).
        seed
            Seed of the subsample.
        abilities
            Also keep the fitted LLMs' abilities.
        responses
            The data the fit was made on (default: its ``observed_data``); its item and LLM
            order is the order of every axis.
        extra
            Further posterior variables to thin with the same draws (into :attr:`extra`).

        """
        variables = ("loading", "intercept", *TYPE_PARAMETER_VARIABLES, *extra)
        if abilities:
            variables = ("ability", *variables)
        total = posterior["posterior"].sizes["chain"] * posterior["posterior"].sizes["draw"]
        draws = thinned_draws(
            posterior, total if n_draws is None else n_draws, seed=seed, variables=variables
        )
        if responses is None and "observed_data" in posterior.children:
            responses = responses_from_tree(posterior)
        layout = (
            ResponseLayout.from_responses(responses) if responses is not None else response_layout(posterior)
        )
        items = responses.items.astype(str) if responses is not None else draws["item"].values.astype(str)
        loading = draws["loading"].sel(item=items).transpose("sample_index", "item", "dimension")
        ability, llms = None, np.array([], dtype=str)
        if abilities:
            llms = responses.llms.astype(str) if responses is not None else draws["llm"].values.astype(str)
            ability = draws["ability"].sel(llm=llms).transpose("sample_index", "llm", "dimension").values
        kept_extra = [name for name in extra if name in draws]
        return cls(
            items=np.asarray(items, dtype=str),
            dimensions=[str(d) for d in loading["dimension"].values],
            loading=loading.values,
            intercept=draws["intercept"].sel(item=items).transpose("sample_index", "item").values,
            params=type_parameters(layout, draws),
            layout=layout,
            ability_prior_cov=_ability_prior_cov(posterior, loading.sizes["dimension"]),
            llms=np.asarray(llms, dtype=str),
            ability=ability,
            responses=responses,
            extra=draws[kept_extra],
        )

    # ---------------------------------------------------------------- shape and order
    def __len__(self) -> int:
        return self.loading.shape[0]

    @property
    def n_dims(self) -> int:
        """Number of latent dimensions."""
        return self.loading.shape[-1]

    def columns(self, items: Sequence[str] | np.ndarray) -> np.ndarray:
        """Positions of ``items`` on the item axis (KeyError listing unknown ids)."""
        position = {item: i for i, item in enumerate(self.items)}
        unknown = [i for i in items if i not in position]
        if unknown:
            shown = ", ".join(map(str, unknown[:10]))
            raise KeyError(f"{len(unknown)} items are not in the fitted posterior: {shown}")
        return np.array([position[i] for i in items], dtype=np.int64)

    def draw_of_sample(self, n_samples: int) -> np.ndarray:
        """The draw each of ``n_samples`` samples belongs to (``k // (n_samples / draws)``)."""
        return np.arange(n_samples) // (n_samples // len(self))

    def response_model(
        self, columns: np.ndarray | None = None, draws: int | np.ndarray | None = None
    ) -> tuple[ResponseLayout, ItemParameters]:
        """The layout and item parameters of ``columns`` (default: all items).

        Parameters of all draws, or of ``draws`` (one index: that draw's, without a draw axis).
        """
        params = self.params if draws is None else self.layout.at_sample(self.params, draws)
        if columns is None:
            return self.layout, params
        return self.layout.take(columns), self.layout.take_parameters(params, columns)

    def check_responses(
        self, columns: np.ndarray, values: np.ndarray, llms: Sequence[object] | None = None
    ) -> None:
        """Raise ValueError naming every value that does not fit its item's response type.

        ``values`` is ``(item,)`` for one LLM or ``(llm, item)`` for several (``llms`` names
        their rows in the message).
        """
        values = np.asarray(values, dtype=float)
        columns = np.broadcast_to(np.asarray(columns), values.shape)
        types = self.layout.types[columns]
        scale = self.layout.score_scale[columns]
        seen = ~np.isnan(values)
        whole = values == np.round(values)
        integral = self.layout.whole_numbers[columns]
        bad = seen & ((values < 0) | (values > scale) | (integral & ~whole))
        if bad.any():
            shown = {}
            for index in map(tuple, np.argwhere(bad)[:5]):
                who = "" if values.ndim == 1 else f"{llms[index[0]] if llms is not None else index[0]}: "
                label = f"{who}{self.items[columns[index]]} ({types[index]}, highest {scale[index]:g})"
                shown[label] = float(values[index])
            more = f" and {int(bad.sum()) - len(shown)} more" if bad.sum() > len(shown) else ""
            raise ValueError(f"responses outside their items' response types: {shown}{more}")

    # ---------------------------------------------------------------- per draw
    def __iter__(self) -> Iterator[tuple[np.ndarray, ItemParameters]]:
        """``(η (llm, item), item parameters)`` of every draw, with the fitted abilities."""
        if self.ability is None:
            raise ValueError("these draws hold no abilities (PosteriorDraws.from_posterior(abilities=True))")
        for s in range(len(self)):
            yield self.eta(s, self.ability[s]), self.layout.at_sample(self.params, s)

    def eta(self, s: int, ability: np.ndarray, columns: np.ndarray | None = None) -> np.ndarray:
        """Linear predictor of draw ``s`` at ``ability (…, dimension)`` on ``columns`` (all items)."""
        loading, intercept = self.loading[s], self.intercept[s]
        if columns is not None:
            loading, intercept = loading[columns], intercept[columns]
        return linear_predictor(ability, loading, intercept)

    def expected_scores(self, samples: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """``(unit, sample, item)`` expected scores on ``[0, 1]`` on ``columns``.

        ``samples (unit, sample, dimension)`` are ability samples, sample ``k`` paired with
        draw :meth:`draw_of_sample` ``[k]`` (binary items: probabilities of a right answer).
        """
        return self.score_moments(samples, columns, variance=False)[0]

    def score_moments(
        self, samples: np.ndarray, columns: np.ndarray, *, variance: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Expected scores and response variances on ``[0, 1]``, each ``(unit, sample, item)``.

        As :meth:`expected_scores`; the variance is that of one response given the sample's
        ability and item draw (the noise of answering), ``None`` unless asked for.
        """
        draw_of_sample = self.draw_of_sample(samples.shape[1])
        loading = self.loading[draw_of_sample][:, columns, :]  # (sample, item, dim)
        intercept = self.intercept[draw_of_sample][:, columns]
        eta = linear_predictor(samples[:, :, None, :], loading, intercept)[:, :, 0, :]
        layout, params = self.response_model(columns, draw_of_sample)
        expected = layout.expected_score(eta, params, expand=0)
        return expected, layout.variance(eta, params, expand=0) if variance else None

    def information_weight(
        self, s: int, ability: np.ndarray, columns: np.ndarray | None = None
    ) -> np.ndarray:
        """Fisher information about ``η`` of each (ability row, item) under draw ``s``."""
        layout, params = self.response_model(columns, s)
        return layout.information_weight(self.eta(s, ability, columns), params, expand=0)

    def expected_information(
        self,
        abilities: np.ndarray,
        columns: np.ndarray | None = None,
        *,
        dims: Sequence[int] | None = None,
    ) -> np.ndarray:
        """``(unit, item, k, k)`` Fisher information about the abilities, averaged over samples.

        ``I = E[w(η) a aᵀ]``, ``w`` the response model's information about ``η`` and ``a``
        the loadings on ``dims`` (default: every dimension), averaged over ability samples
        ``abilities (sample, unit, dimension)``, sample ``k`` paired with draw
        :meth:`draw_of_sample` ``[k]``: the fitted LLMs' draws (one sample per draw) or a
        new LLM's posterior samples, so the uncertainty of items and abilities is integrated.
        """
        dims = list(range(self.n_dims)) if dims is None else list(dims)
        draw_of_sample = self.draw_of_sample(abilities.shape[0])
        if abilities.shape[1] == 1:  # one LLM's samples: every sample at once
            cols = np.arange(len(self.items)) if columns is None else np.asarray(columns)
            loading = self.loading[draw_of_sample][:, cols, :]  # (sample, item, dim)
            eta = linear_predictor(abilities, loading, self.intercept[draw_of_sample][:, cols])
            layout, params = self.response_model(cols, draw_of_sample)
            weight = layout.information_weight(eta[:, 0, :], params, expand=0)  # (sample, item)
            return information_matrix(weight, loading[..., dims]).mean(axis=0)[None]
        n_items = len(self.items) if columns is None else len(columns)
        total = np.zeros((abilities.shape[1], n_items, len(dims), len(dims)))
        for k, s in enumerate(draw_of_sample):
            weight = self.information_weight(int(s), abilities[k], columns)
            a = self.loading[s][:, dims] if columns is None else self.loading[s][columns][:, dims]
            total += information_matrix(weight, np.broadcast_to(a, (*weight.shape, len(dims))))
        return total / abilities.shape[0]

    def take_items(self, columns: np.ndarray) -> PosteriorDraws:
        """The same draws restricted to some items."""
        columns = np.asarray(columns)
        return replace(
            self,
            items=self.items[columns],
            loading=self.loading[:, columns],
            intercept=self.intercept[:, columns],
            params=self.layout.take_parameters(self.params, columns),
            layout=self.layout.take(columns),
        )


def _ability_prior_cov(posterior: xr.DataTree, n_dims: int) -> np.ndarray:
    """The prior covariance of a new LLM's abilities, as the fit's spec and posterior say."""
    spec = fit_spec(posterior)
    sigma = float(spec.ability.sigma) if spec is not None else 1.0
    if spec is not None and spec.ability.correlation == "whitened":
        sigma = 1.0  # the fitted LLMs' abilities have unit sample variance whatever sigma is
    post = posterior["posterior"]
    if "ability_correlation" in post.data_vars:
        return post["ability_correlation"].mean(("chain", "draw")).values * sigma**2
    return np.eye(n_dims) * sigma**2
