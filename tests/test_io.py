import numpy as np
import pytest
import xarray as xr

from benchmirt_bayes import PosteriorFileError, load_posterior, save_posterior, simulate_benchmirt


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_round_trip_is_lossless(advi_fit, small_sim, tmp_path, suffix):
    path = save_posterior(advi_fit, tmp_path / f"fit{suffix}")
    back = load_posterior(path, small_sim.responses)
    for group in ("posterior", "observed_data", "elbo"):
        xr.testing.assert_identical(back[group].to_dataset(), advi_fit[group].to_dataset())
    assert back.attrs == advi_fit.attrs


def test_other_data_is_refused(advi_fit, tmp_path):
    path = save_posterior(advi_fit, tmp_path / "fit.nc")
    other = simulate_benchmirt(scale=0.02, n_llms=60, seed=999).responses
    with pytest.raises(PosteriorFileError, match="fitted on other data"):
        load_posterior(path, other)


def test_truncated_and_corrupt_files(advi_fit, tmp_path):
    path = save_posterior(advi_fit, tmp_path / "fit.nc")
    data = path.read_bytes()
    truncated = tmp_path / "truncated.nc"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(PosteriorFileError, match="truncated or corrupt"):
        load_posterior(truncated)
    corrupt = tmp_path / "corrupt.nc"
    corrupt.write_bytes(b"garbage" * 100)
    with pytest.raises(PosteriorFileError, match="truncated or corrupt"):
        load_posterior(corrupt)
    with pytest.raises(PosteriorFileError, match="no posterior file"):
        load_posterior(tmp_path / "missing.nc")


def test_a_foreign_netcdf_is_refused(tmp_path):
    path = tmp_path / "foreign.nc"
    xr.DataTree.from_dict({"posterior": xr.Dataset({"x": ("a", np.arange(3))})}).to_netcdf(
        path, engine="h5netcdf"
    )
    with pytest.raises(PosteriorFileError, match="not a benchmirt_bayes posterior"):
        load_posterior(path)


def test_no_partial_file_is_left_behind(advi_fit, tmp_path):
    save_posterior(advi_fit, tmp_path / "fit.nc")
    assert [p.name for p in tmp_path.iterdir()] == ["fit.nc"]


def test_flipped_bytes_are_refused_never_loaded_with_other_values(map_fit, tmp_path):
    from benchmirt_bayes.integrity import tree_checksum

    path = save_posterior(map_fit, tmp_path / "fit.nc")
    original = path.read_bytes()
    reference = tree_checksum(load_posterior(path))
    rng = np.random.default_rng(0)
    refused = 0
    for position in rng.choice(len(original), size=60, replace=False):
        damaged = bytearray(original)
        damaged[position] ^= 0xFF
        target = tmp_path / "damaged.nc"
        target.write_bytes(bytes(damaged))
        try:
            tree = load_posterior(target)
        except PosteriorFileError:
            refused += 1
            continue
        assert tree_checksum(tree) == reference, f"byte {position} changed the contents and loaded"
    assert refused > 0


def test_edited_values_are_refused_with_the_file_name(map_fit, tmp_path):
    path = save_posterior(map_fit, tmp_path / "fit.nc")
    tree = xr.open_datatree(path, engine="h5netcdf").load()
    edited = tree["posterior"].to_dataset()
    edited["intercept"] = edited["intercept"] + 0.5
    tree["posterior"] = xr.DataTree(edited)
    tree.to_netcdf(tmp_path / "edited.nc", engine="h5netcdf")
    with pytest.raises(PosteriorFileError, match=r"edited\.nc is refused: .*checksum mismatch"):
        load_posterior(tmp_path / "edited.nc")


def test_a_fit_without_abilities_is_refused_when_loaded(map_fit, tmp_path):
    from benchmirt_bayes.integrity import with_checksum

    tree = map_fit.copy()
    tree["posterior"] = xr.DataTree(tree["posterior"].to_dataset().drop_vars("ability"))
    with_checksum(tree).to_netcdf(tmp_path / "no_ability.nc", engine="h5netcdf")
    with pytest.raises(PosteriorFileError, match=r"lacks the variable\(s\) \['posterior/ability'\]"):
        load_posterior(tmp_path / "no_ability.nc")


def test_zarr_with_a_deleted_chunk_is_refused(map_fit, tmp_path):
    path = save_posterior(map_fit, tmp_path / "fit.zarr")
    chunks = [p for p in (path / "posterior" / "loading").rglob("*") if p.is_file() and p.name[0].isdigit()]
    chunks += [p for p in (path / "posterior" / "loading").rglob("c/*") if p.is_file()]
    assert chunks
    chunks[0].unlink()
    with pytest.raises(PosteriorFileError):
        load_posterior(path)


def test_overwriting_a_zarr_fit_keeps_the_old_one_until_the_new_one_is_complete(
    map_fit, tmp_path, monkeypatch
):
    path = save_posterior(map_fit, tmp_path / "fit.zarr")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed mid-save")

    monkeypatch.setattr(xr.DataTree, "to_zarr", killed)
    with pytest.raises(KeyboardInterrupt):
        save_posterior(map_fit, path)
    monkeypatch.undo()
    back = load_posterior(path)  # the previous fit is intact
    xr.testing.assert_identical(back["posterior"].to_dataset(), map_fit["posterior"].to_dataset())
