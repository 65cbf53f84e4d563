import pytest

from benchmirt_bayes import ModelSpec, available_specs, load_spec


def test_shipped_specs_load_by_name():
    assert {"exploratory", "2pl", "confirmatory_safety_reasoning"} <= set(available_specs())
    spec = load_spec("exploratory")
    assert spec.name == "exploratory" and not spec.is_confirmatory
    assert load_spec(None) == spec
    confirmatory = load_spec("confirmatory_safety_reasoning")
    assert confirmatory.is_confirmatory
    assert confirmatory["confirmatory"]["pattern"]["MATH"] == ["reasoning"]


def test_overrides_and_json_round_trip():
    spec = load_spec({"loading": {"spread_sigma": 2.0}})
    assert spec["loading"]["spread_sigma"] == 2.0
    assert spec["loading"]["mean_sigma"] == load_spec()["loading"]["mean_sigma"]
    assert ModelSpec.from_json(spec.to_json()) == spec


def test_specs_without_the_optional_fields_still_load():
    # specs stored in the attrs of fits made before [loading] zero_sum existed
    settings = load_spec().settings
    del settings["loading"]["zero_sum"]
    old = ModelSpec("exploratory", "", settings)
    assert load_spec(old)["loading"]["zero_sum"] is False
    assert load_spec()["loading"]["zero_sum"] is True


def test_load_from_path(tmp_path):
    text = (load_spec.__globals__["SPEC_DIRS"][-1] / "exploratory.toml").read_text()
    path = tmp_path / "mine.toml"
    path.write_text(text.replace('name = "exploratory"', 'name = "mine"'))
    assert load_spec(path).name == "mine"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"loading": {"spred_sigma": 1.0}}, "unknown field loading.spred_sigma"),
        ({"loading": {"spread_sigma": -1.0}}, "must be positive"),
        ({"loading": {"spread_sigma": "wide"}}, "wrong type"),
        ({"priors": {"x": 1}}, "unknown section"),
        ({"ability": {"correlation": "lkj"}}, "needs a \\[confirmatory\\] pattern"),
        ({"identification": {"anchors": "sometimes"}}, "identification.anchors"),
        ({"loading": {"noncentered": False, "zero_sum": True}}, "zero_sum = true needs"),
        ({"intercept": {"noncentered": "sometimes"}}, "intercept.noncentered must be true, false or 'auto'"),
    ],
)
def test_invalid_specs_are_explained(overrides, message):
    with pytest.raises(ValueError, match=message):
        load_spec(overrides)


def test_unknown_name_lists_the_available_ones():
    with pytest.raises(ValueError, match=r"available: .*exploratory"):
        load_spec("nonexistent")
