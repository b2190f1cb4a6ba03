"""Loading, column choice, z-scoring and input checks."""

import numpy as np
import pandas as pd
import pytest

from probanon._validation import check_k, check_matrix, check_random_state
from probanon.data import Standardizer, read_table, select_columns, synthetic_survey, zscore
from probanon.errors import InputError, ParameterError, ProbanonError


def test_zscore_uses_population_sd():
    X = np.array([[1.0, 10.0], [2.0, 10.0], [3.0, 10.0], [6.0, 10.0]])
    Z = zscore(X)
    mean, sd = 3.0, np.sqrt(((np.array([1, 2, 3, 6]) - 3.0) ** 2).mean())  # ddof = 0 by hand: sqrt(3.5)
    np.testing.assert_allclose(Z[:, 0], (X[:, 0] - mean) / sd)
    np.testing.assert_array_equal(Z[:, 1], 0.0)  # constant column: centred, never divided by 0
    s = Standardizer.fit(X)
    np.testing.assert_allclose(s.inverse_transform(s.transform(X)), X)
    back = Standardizer.from_dict(s.to_dict())
    assert np.array_equal(back.mean_, s.mean_) and np.array_equal(back.scale_, s.scale_)


def test_read_csv_and_parquet(tmp_path, shared_data):
    census = read_table(shared_data / "casc" / "census.csv")
    assert census.shape == (1080, 13)
    census.to_parquet(tmp_path / "c.parquet")
    pd.testing.assert_frame_equal(read_table(tmp_path / "c.parquet"), census)
    with pytest.raises(InputError, match="unknown file type"):
        read_table(tmp_path / "c.txt")


def test_select_columns():
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": [0.5, 1.5], "flag": [True, False]})
    assert select_columns(df) == ["a", "c"]
    assert select_columns(df, ["c", "a"]) == ["c", "a"]
    with pytest.raises(InputError, match="not numeric"):
        select_columns(df, ["b"])
    with pytest.raises(InputError, match="not in the table"):
        select_columns(df, ["zz"])
    with pytest.raises(InputError, match="named twice"):
        select_columns(df, ["a", "a"])
    with pytest.raises(InputError, match="no numeric column"):
        select_columns(df[["b"]])


def test_text_in_numeric_column_is_named():
    df = pd.DataFrame({"age": ["31", "45", "x7", "52"], "w": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(InputError, match=r"column 'age' has text in a numeric column \(row 2: 'x7'\)"):
        select_columns(df)


def test_check_matrix_and_k():
    with pytest.raises(InputError, match="empty"):
        check_matrix(np.empty((0, 3)))
    with pytest.raises(InputError, match=r"row 1, column 'b'"):
        check_matrix(pd.DataFrame({"a": [1.0, 2.0], "b": [0.0, np.nan]}))
    with pytest.raises(InputError, match="not numbers"):
        check_matrix([["a", "b"]])
    assert check_k(3, 10) == 3 and check_k(10.0, 10) == 10
    for bad in (0, -1, 2.5, "3"):
        with pytest.raises(ParameterError):
            check_k(bad, 10)
    with pytest.raises(ParameterError, match="larger than the number of records"):
        check_k(11, 10)
    assert issubclass(InputError, ProbanonError) and issubclass(ParameterError, ValueError)


def test_random_state_and_synthetic_data_are_reproducible():
    a, b = synthetic_survey(200, random_state=5), synthetic_survey(200, random_state=5)
    pd.testing.assert_frame_equal(a, b)
    assert not synthetic_survey(200, random_state=6).equals(a)
    assert isinstance(check_random_state(1), np.random.Generator)
    with pytest.raises(ParameterError):
        check_random_state("seed")
