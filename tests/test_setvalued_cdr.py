"""Synthetic CDR generator (Table II of the k^m-anonymity paper), generalization constraints
(hierarchy, adjacency, clipped Voronoi cells), the partition error and ``probanon km generate-cdr``."""

import itertools

import numpy as np
import pandas as pd
import pytest

from probanon.cli import main
from probanon.errors import InputError, ParameterError
from probanon.setvalued.cdr import generate_cdr, record_size_distribution, write_cdr
from probanon.setvalued.constraints import (
    clipped_voronoi,
    constraints_from_adjacency,
    constraints_from_coordinates,
    constraints_from_hierarchy,
    hierarchy_cover,
    is_contiguous,
    is_permitted,
    partition_error,
)

# Table II of the paper
USERS, TOWERS, AREA_KM2, MEAN, SD, SIZE_MAX = 4_427_486, 1303, 128.1, 11.42, 17.23, 422


@pytest.fixture(scope="module")
def cdr200k():
    return generate_cdr(200_000, random_state=2024)


def _records(indptr, indices):
    return [indices[indptr[i]:indptr[i + 1]].tolist() for i in range(len(indptr) - 1)]


# ------------------------------------------------------------------------------------ generator

def test_record_sizes_match_table_ii(cdr200k):
    s = cdr200k.sizes.astype(float)
    n = len(s)
    assert n == 200_000
    assert s.min() >= 1 and s.max() <= SIZE_MAX
    # Standard errors at n = 200,000: mean sd/sqrt(n) = 17.23/447 = 0.039 (0.34 %); sample sd
    # sqrt((m4 - v^2)/n) / (2 sd), with the fourth central moment m4 estimated from the sample
    # (heavy tail: about 0.17, 1 %). Four standard errors each.
    assert abs(s.mean() - MEAN) <= 4 * SD / np.sqrt(n)
    v = s.var()
    m4 = ((s - s.mean()) ** 4).mean()
    se_sd = np.sqrt((m4 - v * v) / n) / (2 * np.sqrt(v))
    assert 0.05 < se_sd < 0.5
    assert abs(s.std(ddof=1) - SD) <= 4 * se_sd


def test_calibrated_size_law_has_table_ii_moments():
    law = record_size_distribution()
    assert len(law.pmf) == SIZE_MAX
    assert law.pmf.sum() == pytest.approx(1, abs=1e-12)
    assert law.mean == pytest.approx(MEAN, rel=1e-8)
    assert law.sd == pytest.approx(SD, rel=1e-8)
    # the full-size maximum is 422 only if the clipping class is populated: E[count] = n P(s = 422)
    assert USERS * law.pmf[-1] > 20
    with pytest.raises(ParameterError):
        record_size_distribution(500.0, 1.0, 422)


def test_towers_and_records_are_valid_sets(cdr200k):
    c = cdr200k
    assert c.n_towers == TOWERS and c.towers.shape == (TOWERS, 2)
    assert c.area_km2 == pytest.approx(AREA_KM2, rel=1e-12)
    assert (c.towers >= 0).all() and (c.towers <= c.side).all()
    assert c.indptr.dtype == np.int64 and c.indices.dtype == np.int32
    assert c.indices.min() >= 0 and c.indices.max() < TOWERS
    # strictly increasing within each record: sets of exactly |D_u| towers
    d = np.diff(c.indices.astype(np.int64))
    inner = np.ones(len(d), dtype=bool)
    inner[c.indptr[1:-1] - 1] = False
    assert (d[inner] > 0).all()
    # home tower in every record
    first = np.repeat(np.arange(c.n_users), c.sizes)
    has_home = np.zeros(c.n_users, dtype=bool)
    has_home[first[c.indices == c.home[first]]] = True
    assert has_home.all()


def test_towers_denser_in_centre(cdr200k):
    # share of towers in the central square of a quarter of the area: 1/4 for a uniform network
    # (binomial sd 0.012 at 1303 towers); the central component puts it far above
    c = cdr200k
    centre = np.abs(c.towers - c.side / 2).max(axis=1) <= c.side / 4
    assert centre.mean() > 0.25 + 10 * np.sqrt(0.25 * 0.75 / TOWERS)


def test_records_are_spatially_local(cdr200k):
    # mean distance of an item to the nearer of home/work vs the mean distance between two uniform
    # points of a square (0.5214 side)
    c = cdr200k
    user = np.repeat(np.arange(c.n_users), c.sizes)
    xy = c.towers[c.indices]
    d_home = np.hypot(*(xy - c.towers[c.home[user]]).T)
    d_work = np.hypot(*(xy - c.towers[c.work[user]]).T)
    assert np.minimum(d_home, d_work).mean() < 0.25 * 0.5214 * c.side


def test_seed_reproducible():
    a = generate_cdr(3000, random_state=7)
    b = generate_cdr(3000, random_state=np.random.default_rng(7))
    c = generate_cdr(3000, random_state=8)
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    assert np.array_equal(a.towers, b.towers)
    assert not np.array_equal(a.towers, c.towers)


def test_generator_rejects_bad_parameters():
    with pytest.raises(ParameterError):
        generate_cdr(0)
    with pytest.raises(ParameterError):
        generate_cdr(10, towers=1)
    with pytest.raises(ParameterError):
        generate_cdr(10, random_state="x")


def test_fimi_round_trip(tmp_path):
    c = generate_cdr(2000, random_state=1)
    towers_path, records_path = write_cdr(c, tmp_path / "out")
    lines = records_path.read_text().split("\n")
    assert lines[-1] == "" and len(lines) == 2001
    assert [[int(t) for t in line.split()] for line in lines[:-1]] == _records(c.indptr, c.indices)
    frame = pd.read_csv(towers_path)
    assert list(frame.columns) == ["tower", "x", "y"]
    assert np.array_equal(frame["tower"], np.arange(TOWERS))
    assert np.allclose(frame[["x", "y"]], c.towers, atol=0.005)
    not_dir = tmp_path / "file"
    not_dir.write_text("x")
    with pytest.raises(InputError):
        write_cdr(c, not_dir)


# --------------------------------------------------------------------------------- constraints

def _king_pairs(side):
    """Adjacency of unit square cells of a side x side grid: shared edge or corner."""
    pts = [(i, j) for j in range(side) for i in range(side)]
    return {(a, b) for a, b in itertools.combinations(range(len(pts)), 2)
            if max(abs(pts[a][0] - pts[b][0]), abs(pts[a][1] - pts[b][1])) == 1}


def _pairs(c):
    return {(i, int(j)) for i in range(c.n_items) for j in c.neighbours(i) if i < j}


def test_two_by_two_grid_point_contact():
    # cells are the four 2x2 quadrants of [0,4]^2; diagonal cells touch only at (2, 2)
    c = constraints_from_coordinates(np.array([[1, 1], [3, 1], [1, 3], [3, 3.0]]), bounds=(0, 0, 4, 4))
    assert _pairs(c) == {(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)}
    assert np.allclose(c.areas, 4) and np.allclose(c.centroids, c.coordinates)


@pytest.mark.parametrize("side", [3, 9])  # 9 x 9 = 81 points: the scipy Voronoi path, cocircular points
def test_grid_cells_and_king_adjacency(side):
    g = np.array([(i, j) for j in range(side) for i in range(side)], dtype=float)
    c = constraints_from_coordinates(g, bounds=(-0.5, -0.5, side - 0.5, side - 0.5))
    assert _pairs(c) == _king_pairs(side)
    assert np.allclose(c.areas, 1) and np.allclose(c.centroids, g)


def test_voronoi_cells_tile_the_city():
    cdr = generate_cdr(10, random_state=3)
    c = constraints_from_coordinates(cdr.towers, bounds=cdr.bounds)
    assert c.areas.sum() == pytest.approx(AREA_KM2 * 1e6, rel=1e-9)
    assert (c.areas > 0).all()
    # adjacency symmetric, no self-loops
    rows = np.repeat(np.arange(c.n_items), np.diff(c.indptr))
    forward = set(zip(rows.tolist(), c.indices.tolist()))
    assert forward == {(j, i) for i, j in forward} and all(i != j for i, j in forward)
    # every cell vertex is no nearer to another tower than to its own (the Voronoi property)
    for i in range(0, c.n_items, 97):
        d = np.hypot(*(c.cells[i][:, None, :] - cdr.towers[None, :, :]).transpose(2, 0, 1))
        assert (d[:, i] <= d.min(axis=1) + 1e-6).all()
    # the whole city is one contiguous part
    assert is_contiguous(np.arange(c.n_items), c)


def test_coordinates_errors(tmp_path):
    with pytest.raises(InputError, match="same coordinates"):
        clipped_voronoi(np.array([[0, 0], [1, 1], [0, 0.0]]))
    with pytest.raises(InputError, match="inside"):
        clipped_voronoi(np.array([[0, 0], [1, 1.0]]), bounds=(0, 0, 0.5, 0.5))
    with pytest.raises(InputError):
        clipped_voronoi(np.array([[0, np.nan], [1, 1.0]]))
    p = tmp_path / "xy.csv"
    p.write_text("tower,x,y\na,0,0\nb,abc,1\n")
    with pytest.raises(InputError, match="numbers"):
        constraints_from_coordinates(p)
    p.write_text("tower,x,y\na,0,0\nb,2,1\nc,0,2\n")
    c = constraints_from_coordinates(p)
    assert list(c.items) == ["a", "b", "c"] and c.areas.sum() == pytest.approx(4.0)


HIERARCHY = "child,parent\nBoston,East\nNY,East\nLA,West\nSF,West\nEast,USA\nWest,USA\n"


def test_hierarchy(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text(HIERARCHY)
    c = constraints_from_hierarchy(p, items=["NY", "SF", "LA", "Boston"])
    assert list(c.items) == ["Boston", "NY", "LA", "SF"]
    assert _pairs(c) == {(0, 1), (2, 3)}
    assert is_permitted([0, 1], c) and is_permitted([2], c) and is_permitted([0, 1, 2, 3], c)
    assert not is_permitted([0, 2], c) and not is_permitted([0, 1, 2], c)
    assert hierarchy_cover([0, 2], c).tolist() == [0, 1, 2, 3]
    assert hierarchy_cover([3, 2], c).tolist() == [2, 3]
    with pytest.raises(InputError, match="'Paris' of the data is not in the hierarchy"):
        constraints_from_hierarchy(p, items=["NY", "Paris"])
    # issue 13: the other direction too, a leaf that the data do not hold (inner nodes are no items)
    with pytest.raises(InputError, match="'Boston' of the hierarchy is not in the data"):
        constraints_from_hierarchy(p, items=["NY", "SF", "LA"])
    with pytest.raises(InputError, match="'East' of the data is an inner node of the hierarchy"):
        constraints_from_hierarchy(p, items=["NY", "SF", "LA", "Boston", "East"])


@pytest.mark.parametrize("text, message", [
    ("child,parent\n", "no records"),
    ("node,up\na,b\n", "child,parent"),
    ("child,parent\na,b\na,c\n", "two parents"),
    ("child,parent\nx,a\na,b\nb,a\n", "cycle"),
    ("child,parent\na,\n", "empty field"),
])
def test_hierarchy_errors(tmp_path, text, message):
    p = tmp_path / "h.csv"
    p.write_text(text)
    with pytest.raises(InputError, match=message) as err:
        constraints_from_hierarchy(p)
    assert "\n" not in str(err.value)


def test_adjacency(tmp_path):
    p = tmp_path / "e.csv"
    p.write_text("a,b\nt1,t2\nt2,t3\nt3,t4\nt2,t1\nt4,t4\n")
    c = constraints_from_adjacency(p)
    assert list(c.items) == ["t1", "t2", "t3", "t4"]
    assert _pairs(c) == {(0, 1), (1, 2), (2, 3)}
    assert is_contiguous([0, 1, 2], c) and is_permitted([3, 2], c)
    assert not is_contiguous([0, 2], c) and not is_permitted([0, 3], c)
    with pytest.raises(InputError, match="'t9' of the data is not in the adjacency graph"):
        constraints_from_adjacency(p, items=["t1", "t9"])
    with pytest.raises(InputError, match="'t3' of the adjacency graph is not in the data"):
        constraints_from_adjacency(p, items=["t1", "t2", "t4"])
    assert constraints_from_adjacency(p, items=["t4", "t3", "t2", "t1"]).n_items == 4
    with pytest.raises(ParameterError):
        is_contiguous([0, 7], c)
    with pytest.raises(InputError, match="no such file"):
        constraints_from_adjacency(tmp_path / "missing.csv")


# ------------------------------------------------------------------------------ partition error

def test_partition_error_hand_computed():
    # box [0,5]x[0,2], towers (1,1), (3,1): bisector x = 2, cells [0,2]x[0,2] (area 4, centroid
    # (1,1)) and [2,5]x[0,2] (area 6, centroid (3.5,1)); merged centre = centroid of [0,5]x[0,2]
    # = (2.5, 1); distances 1.5 and 1.0; occurrences 1 and 3: err = (1.5 + 3 * 1.0) / 4 = 1.125
    c = constraints_from_coordinates(np.array([[1, 1], [3, 1.0]]), bounds=(0, 0, 5, 2))
    assert np.allclose(c.areas, [4, 6]) and np.allclose(c.centroids, [[1, 1], [3.5, 1]])
    assert partition_error(np.array([0, 0]), np.array([1, 3]), c) == pytest.approx(1.125)
    assert partition_error(np.array([0, 1]), np.array([1, 3]), c) == 0.0
    # 2x2 grid of [0,4]^2: merge cells 0 and 1 (centre (2,1)), occurrences 3,1,5,7: (3 + 1)/16
    g = constraints_from_coordinates(np.array([[1, 1], [3, 1], [1, 3], [3, 3.0]]), bounds=(0, 0, 4, 4))
    assert partition_error(np.array([0, 0, 1, 2]), np.array([3, 1, 5, 7]), g) == pytest.approx(0.25)


def test_partition_error_without_coordinates(tmp_path):
    p = tmp_path / "e.csv"
    p.write_text("a,b\nt1,t2\nt2,t3\nt3,t4\n")
    c = constraints_from_adjacency(p)
    # items 0 and 1 share a part with 1 of the 3 other items each: (1/3 + 1/3) / 4 = 1/6
    assert partition_error(np.array([0, 0, 1, 2]), np.ones(4), c) == pytest.approx(1 / 6)
    with pytest.raises(ParameterError):
        partition_error(np.array([0, 0, 1]), np.ones(4), c)
    with pytest.raises(ParameterError):
        partition_error(np.array([0, 0, 1, 2]), np.zeros(4), c)


# --------------------------------------------------------------------------------------- CLI

def test_cli_generate_cdr(tmp_path, capsys):
    out = tmp_path / "cdr"
    assert main(["km", "generate-cdr", "--users", "500", "-o", str(out), "--seed", "5", "--quiet"]) == 0
    first = (out / "records.txt").read_bytes()
    assert len(first.decode().splitlines()) == 500
    assert len(pd.read_csv(out / "towers.csv")) == TOWERS
    assert main(["km", "generate-cdr", "--users", "500", "-o", str(out), "--seed", "5", "--quiet"]) == 2  # exists
    assert main(["km", "generate-cdr", "--users", "500", "-o", str(out), "--seed", "5", "--quiet", "--force"]) == 0
    assert (out / "records.txt").read_bytes() == first
    bad = tmp_path / "file"
    bad.write_text("x")
    capsys.readouterr()
    assert main(["km", "generate-cdr", "--users", "10", "-o", str(bad), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("probanon: error:") and err.count("\n") == 1
    assert main(["km", "generate-cdr", "--users", "0", "-o", str(out)]) == 2
