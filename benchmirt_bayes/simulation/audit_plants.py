"""Planted audit findings for the simulator: modified LLMs, contamination, DIF items, flipped keys.

:class:`AuditPlan` says what to plant; :func:`simulate_benchmirt` (``audits=``) applies it
with its own random stream, so a plan never changes the unplanted parts' random draws for
a given seed, and ``audits=None`` gives exactly the data of earlier versions.

* **Modified pairs**: for ``n_pairs`` base LLMs a modified copy (``<base>-modified``) whose
  abilities are the base's plus a planted shift (by default the safety ability drops by 0,
  0.25, 0.5, 1 or 1.5 SD in turn and reasoning does not move), answering every item anew.
* **Contamination**: ``n_contaminated`` LLM × benchmark cells in which the LLM answers the
  hardest ``contamination_share`` of the benchmark's items correctly whatever its ability
  (it has seen them). Cells are drawn among LLMs below the 75th percentile of ability on the
  benchmark's main dimension, where seeing the items changes what they get right, and never
  among the LLMs of planted pairs (so each planted effect is measured alone).
* **DIF**: LLMs get a ``family`` (three families, half of the LLMs in the focal one); for
  ``n_dif_items`` binary items of moderate difficulty the focal family's logits are shifted
  by ``±dif_shift`` (equal ability, different success).
* **Flipped keys**: ``n_flipped`` binary items that discriminate along their subgroup's
  direction (by at least 0.5) score 1 − (correct answer), so strong LLMs "fail" them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmirt_bayes.response_types.base import mdisc

FAMILIES = ("alpha", "beta", "gamma")
FAMILY_SHARES = (0.3, 0.5, 0.2)
FOCAL_FAMILY = "beta"
"""The family whose items behave differently (half of the LLMs: with 100 LLMs only large
DIF is detectable, and the smaller the focal group the larger it must be)."""


@dataclass(frozen=True)
class AuditPlan:
    """What :func:`benchmirt_bayes.simulate_benchmirt` plants for the audits (all off by default).

    Attributes
    ----------
    n_pairs
        Base LLMs that get a modified copy.
    pair_shifts
        ``(safety, reasoning)`` ability shifts of the modified copies, used in turn.
    n_contaminated
        LLM × benchmark cells whose hardest items are answered correctly.
    contamination_share
        Share of a contaminated benchmark's items (the hardest) answered correctly.
    n_dif_items
        Binary items that behave differently for the focal family.
    dif_shift
        Size of the DIF shift on the logit scale (its sign alternates over items).
    n_flipped
        Binary items whose key is flipped.

    """

    n_pairs: int = 0
    pair_shifts: tuple[tuple[float, float], ...] = (
        (-1.5, 0.0),
        (-1.0, 0.0),
        (-0.5, 0.0),
        (-0.25, 0.0),
        (0.0, 0.0),
    )
    n_contaminated: int = 0
    contamination_share: float = 0.3
    n_dif_items: int = 0
    dif_shift: float = 3.0
    n_flipped: int = 0

    def __post_init__(self) -> None:
        for name in ("n_pairs", "n_contaminated", "n_dif_items", "n_flipped"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        if not 0 < self.contamination_share <= 1:
            raise ValueError(f"contamination_share must be in (0, 1], got {self.contamination_share}")
        if self.n_pairs and not self.pair_shifts:
            raise ValueError("pair_shifts must give at least one (safety, reasoning) shift")


@dataclass(frozen=True)
class PlantedAbilities:
    """The abilities after adding modified copies, and who is whose copy."""

    ability: np.ndarray  # (llm, dimension), base LLMs first
    llms: np.ndarray
    family: np.ndarray
    variant: np.ndarray  # "base" or "modified"
    base_of: np.ndarray  # the base LLM of a modified copy, "" otherwise
    pair_shift: np.ndarray  # (pair, dimension)
    pairs: list[tuple[str, str]]


def plant_abilities(
    plan: AuditPlan, ability: np.ndarray, llms: np.ndarray, rng: np.random.Generator
) -> PlantedAbilities:
    """Append the modified copies and draw every LLM's family."""
    n_llms = ability.shape[0]
    if plan.n_pairs > n_llms:
        raise ValueError(f"n_pairs={plan.n_pairs} exceeds the {n_llms} LLMs")
    bases = (
        np.sort(rng.choice(n_llms, size=plan.n_pairs, replace=False)) if plan.n_pairs else np.array([], int)
    )
    shifts = np.array([plan.pair_shifts[k % len(plan.pair_shifts)] for k in range(plan.n_pairs)]).reshape(
        -1, 2
    )
    modified = ability[bases] + shifts
    family = np.asarray(FAMILIES, dtype=object)[rng.choice(len(FAMILIES), size=n_llms, p=FAMILY_SHARES)]
    names = np.array([f"{llms[b]}-modified" for b in bases], dtype=object)
    return PlantedAbilities(
        ability=np.vstack([ability, modified]),
        llms=np.concatenate([llms.astype(object), names]),
        family=np.concatenate([family, family[bases]]),
        variant=np.array(["base"] * n_llms + ["modified"] * plan.n_pairs, dtype=object),
        base_of=np.concatenate([np.full(n_llms, "", dtype=object), llms[bases].astype(object)]),
        pair_shift=shifts,
        pairs=[(str(llms[b]), str(n)) for b, n in zip(bases, names, strict=True)],
    )


def dif_shifts(
    plan: AuditPlan, family: np.ndarray, binary: np.ndarray, intercept: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``(logit shift (llm, item), planted shift per item)`` for the focal family's DIF items.

    Items get the shift ``+dif_shift`` or ``−dif_shift`` in turn, each on an item whose
    intercept lies within 1 of ``∓dif_shift / 2``: the shift then moves the focal group's
    success across one half instead of pushing it further into a floor or ceiling, where no
    amount of data could show it.
    """
    n_items = binary.size
    per_item = np.zeros(n_items)
    signs = np.where(np.arange(plan.n_dif_items) % 2 == 0, 1.0, -1.0)
    taken = np.zeros(n_items, dtype=bool)
    for sign in signs:
        eligible = np.flatnonzero(binary & ~taken & (np.abs(intercept + sign * plan.dif_shift / 2) <= 1.0))
        if eligible.size == 0:
            raise ValueError(f"n_dif_items={plan.n_dif_items}: too few binary items of suitable difficulty")
        chosen = rng.choice(eligible)
        per_item[chosen] = sign * plan.dif_shift
        taken[chosen] = True
    focal = (family == FOCAL_FAMILY).astype(float)
    return focal[:, None] * per_item[None, :], per_item


def contaminate(
    plan: AuditPlan,
    responses: np.ndarray,
    ability: np.ndarray,
    loading: np.ndarray,
    intercept: np.ndarray,
    benchmarks: np.ndarray,
    binary: np.ndarray,
    n_base: int,
    rng: np.random.Generator,
    exclude: np.ndarray | None = None,
) -> np.ndarray:
    """Set the hardest items of planted LLM × benchmark cells to correct; the cells as a mask.

    LLMs in ``exclude`` (the base LLMs of planted pairs) are never contaminated, so a pair's
    comparison measures the planted shift alone. Returns a boolean ``(llm, benchmark)`` mask,
    benchmarks in the order they first appear.
    """
    names = list(dict.fromkeys(benchmarks))
    mask = np.zeros((ability.shape[0], len(names)), dtype=bool)
    candidates = []
    for b, name in enumerate(names):
        cols = np.flatnonzero((benchmarks == name) & binary)
        if cols.size < 4:
            continue
        direction = loading[cols].mean(axis=0)
        main = int(np.argmax(np.abs(direction)))
        along = ability[:n_base, main] * np.sign(direction[main])
        weak = np.flatnonzero(along < np.quantile(along, 0.75))
        candidates.extend((j, b) for j in weak if exclude is None or j not in exclude)
    if plan.n_contaminated > len(candidates):
        raise ValueError(f"n_contaminated={plan.n_contaminated} exceeds the {len(candidates)} eligible cells")
    for index in rng.choice(len(candidates), size=plan.n_contaminated, replace=False):
        j, b = candidates[index]
        cols = np.flatnonzero((benchmarks == names[b]) & binary)
        direction = loading[cols].mean(axis=0)
        # hardest along the benchmark's direction: lowest success for an average LLM there
        unit = direction / max(float(mdisc(direction)), 1e-12)
        ease = intercept[cols] + loading[cols] @ unit
        hardest = cols[np.argsort(ease)[: max(1, round(plan.contamination_share * cols.size))]]
        responses[j, hardest] = 1.0
        mask[j, b] = True
    return mask


def flip_keys(
    plan: AuditPlan,
    responses: np.ndarray,
    binary: np.ndarray,
    loading: np.ndarray,
    groups: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Flip the key of ``n_flipped`` binary items (1 − response); the flipped items as a mask.

    Only items that discriminate along their group's direction (``groups``: benchmark /
    subgroup labels) by at least 0.5 are eligible: reversing an item that measures nothing
    changes nothing a data set could show.
    """
    along = np.zeros(binary.size)
    for group in dict.fromkeys(groups):
        cols = np.flatnonzero(groups == group)
        direction = loading[cols].mean(axis=0)
        along[cols] = loading[cols] @ (direction / max(float(mdisc(direction)), 1e-12))
    candidates = np.flatnonzero(binary & (along >= 0.5))
    if plan.n_flipped > candidates.size:
        raise ValueError(f"n_flipped={plan.n_flipped} exceeds the {candidates.size} eligible binary items")
    flipped = np.zeros(binary.size, dtype=bool)
    flipped[rng.choice(candidates, size=plan.n_flipped, replace=False)] = True
    responses[:, flipped] = 1.0 - responses[:, flipped]
    return flipped
