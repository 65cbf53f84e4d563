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
