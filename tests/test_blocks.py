"""Blocked microaggregation (issue 16, point 2): the cut tree, the per-block fits, the
"blocked" function (reproduces labels_, JSON round trip, validation) and the CLI option."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from probanon.cli import main
from probanon.errors import ParameterError, SpecificationError
from probanon.microagg import MDAV, PCL, VMDAV, function_from_json, mdav_partition
from probanon.microagg.blocks import check_block_size, cut_tree


def gaussian(n, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) * rng.uniform(0.5, 20, size=d) + rng.uniform(-10, 10, size=d)


def walk(function, X):
    """Independent routing: (leaf node index, cell range) of each record, the tree walked in
    Python: z = (x - mean) / scale, z . axis summed column by column in float64, left when
    <= threshold."""
    spec = json.loads(function.to_json())
    nodes = spec["rule"]["nodes"]
    mean, scale = spec["standardization"]["mean"], spec["standardization"]["scale"]
    out = []
    for x in np.asarray(X, dtype=np.float64).tolist():
        z = [(v - m) / s for v, m, s in zip(x, mean, scale)]
        i = 0
        while "kind" not in nodes[i]:
            acc = 0.0
            for zc, ac in zip(z, nodes[i]["axis"]):
                acc += zc * ac
            i = nodes[i]["left"] if acc <= nodes[i]["threshold"] else nodes[i]["right"]
        leaf = nodes[i]
        cells = len(leaf["rule"]["radius2"]) + 1 if leaf["kind"] == "ordered-balls" else len(leaf["rule"]["offsets"])
        out.append((i, leaf["offset"], leaf["offset"] + cells))
    return out


def block_of(function, labels):
    """Block (leaf node index) of each cell, from the leaves' offsets."""
    spec = json.loads(function.to_json())
    owner = np.empty(len(spec["sizes"]), np.int64)
    for i, node in enumerate(spec["rule"]["nodes"]):
        if "kind" in node:
            cells = len(node["rule"]["radius2"]) + 1 if node["kind"] == "ordered-balls" else len(node["rule"]["offsets"])
            owner[node["offset"]:node["offset"] + cells] = i
    return owner[labels]


# ---------------------------------------------------------------- the cut tree


@pytest.mark.parametrize("n, B", [(3000, 400), (3001, 400), (1003, 20)])
def test_blocks_hold_k_to_B_records_continuous(n, B):
    k = 5
    Z = gaussian(n, seed=n)
    nodes, blocks = cut_tree(Z, k, B)
    sizes = np.array([b.size for b in blocks])
    assert sizes.min() >= k and sizes.max() <= B
    # bisection at the median: every block at depth L = ceil(log2(n / B)) (n / 2^(L-1) > B here by a margin)
    depth = int(np.ceil(np.log2(n / B)))
    assert len(blocks) == 2**depth and set(_depths(nodes)) == {depth}
    np.testing.assert_array_equal(np.sort(np.concatenate(blocks)), np.arange(n))  # a partition of the rows
    # all blocks but the one that takes n's remainder hold a multiple of k records
    assert (sizes % k != 0).sum() <= (n % k != 0)
    # every split: the left side's records project at or below the threshold, the right side's above
    for node in nodes:
        if "axis" in node:
            left = np.concatenate([blocks[j] for j in _leaves(nodes, node["left"])])
            right = np.concatenate([blocks[j] for j in _leaves(nodes, node["right"])])
            assert (Z[left] @ node["axis"]).max() <= node["threshold"] < (Z[right] @ node["axis"]).min()


def _depths(nodes, i=0, depth=0):
    node = nodes[i]
    if "block" in node:
        return [depth]
    return _depths(nodes, node["left"], depth + 1) + _depths(nodes, node["right"], depth + 1)


def _leaves(nodes, i):
    node = nodes[i]
    return [node["block"]] if "block" in node else _leaves(nodes, node["left"]) + _leaves(nodes, node["right"])


def test_ties_never_split_and_blocks_hold_k_to_B():
    """Small integers (many identical records): identical records share a block."""
    k, B = 5, 60
    X = np.random.default_rng(3).integers(0, 4, size=(1500, 3)).astype(float)
    model = MDAV(k, block_size=B, n_jobs=1).fit(X)
    assert model.block_sizes_.min() >= k and model.block_sizes_.max() <= B
    assert model.block_sizes_.sum() == len(X) and model.n_blocks_ == model.block_sizes_.size
    block = block_of(model.function_, model.labels_)
    frame = pd.DataFrame(X).assign(block=block)
    assert (frame.groupby([0, 1, 2])["block"].nunique() == 1).all()
    assert np.bincount(model.labels_).min() >= k


def test_one_value_stays_one_block():
    """Records that all tie on every axis cannot be cut: one block, whatever B."""
    nodes, blocks = cut_tree(np.zeros((50, 2)), 5, 10)
    assert len(blocks) == 1 and blocks[0].size == 50


# ---------------------------------------------------------------- the blocked function


@pytest.mark.parametrize("cls, params", [(MDAV, {}), (PCL, {"random_state": 0, "kicks": 20})])
def test_blocked_function_reproduces_labels_and_round_trips(cls, params):
    k, B = 4, 150
    X = gaussian(700, seed=1)
    model = cls(k, block_size=B, n_jobs=1, **params).fit(X)
    f = model.function_
    assert f.kind == "blocked" and model.n_blocks_ == len(model.block_sizes_) >= 5
    assert model.block_size_ == B and f.meta["blocks"] == model.n_blocks_
    np.testing.assert_array_equal(f.assign(X), model.labels_)
    text = f.to_json()
    g = function_from_json(text)
    assert g.to_json() == text
    np.testing.assert_array_equal(g.assign(X), model.labels_)
    np.testing.assert_allclose(g.transform(X), model.centroids_[model.labels_])
    # every cell holds >= k fitted records, and the cells of a block are the block's records
    assert np.bincount(model.labels_).min() >= k
    routes = walk(g, X)
    assert all(lo <= cell < hi for (_, lo, hi), cell in zip(routes, model.labels_))
    # new records: down the tree as the Python walk says, the same cells after the round trip
    new = gaussian(400, seed=99) * 1.5
    cells = g.assign(new)
    np.testing.assert_array_equal(cells, f.assign(new))
    assert all(lo <= cell < hi for (_, lo, hi), cell in zip(walk(g, new), cells))


def test_vmdav_blocks():
    k, B = 3, 100
    X = gaussian(500, seed=2)
    model = VMDAV(k, block_size=B, n_jobs=1).fit(X)
    assert model.function_.kind == "blocked"
    assert model.block_sizes_.min() >= k and model.block_sizes_.max() <= B
    assert np.bincount(model.labels_).min() >= k
    # V-MDAV's nearest-centroid leaves need not reproduce labels_, but the tree does: each
    # record's assigned cell lies in the block it was fitted in
    fitted = block_of(model.function_, model.labels_)
    assigned = block_of(model.function_, model.function_.assign(X))
    np.testing.assert_array_equal(fitted, assigned)
    # the same cut tree as MDAV's for the same data, k and B
    mdav = MDAV(k, block_size=B, n_jobs=1).fit(X)
    np.testing.assert_array_equal(mdav.block_sizes_, model.block_sizes_)


def test_same_seed_same_result_for_one_and_two_workers():
    X = gaussian(600, seed=4)
    a = PCL(3, block_size=150, n_jobs=1, random_state=7, kicks=30).fit(X)
    b = PCL(3, block_size=150, n_jobs=2, random_state=7, kicks=30).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.function_.to_json() == b.function_.to_json()
    m1 = MDAV(3, block_size=150, n_jobs=1).fit(X)
    m2 = MDAV(3, block_size=150, n_jobs=2).fit(X)
    np.testing.assert_array_equal(m1.labels_, m2.labels_)
    assert m1.function_.to_json() == m2.function_.to_json()


def test_blocked_mdav_equals_mdav_per_block():
    """Each block's cells are exactly MDAV's on that block's rows."""
    X = gaussian(900, seed=5)
    model = MDAV(5, block_size=200, n_jobs=1).fit(X)
    Z = model.standardizer_.transform(X)
    nodes, blocks = cut_tree(Z, 5, 200)
    for rows in blocks:
        alone = mdav_partition(Z[rows], 5).labels  # MDAV on the block's rows of the global z-scores
        got = model.labels_[rows]
        np.testing.assert_array_equal(got - got.min(), alone)


# ---------------------------------------------------------------- parameters


def test_block_size_rule():
    assert check_block_size(None, 5, 199_999) == 0
    assert check_block_size(None, 5, 10**6) == 500_000
    assert check_block_size(None, 5, 10**6, default=50_000) == 50_000
    assert check_block_size(0, 5, 10**7) == 0
    assert check_block_size(1000, 5, 1000) == 0  # one block is no block
    assert check_block_size(10, 5, 1000) == 10


@pytest.mark.parametrize("bad", [-1, 1, 9, 2.5, True, "100", 1e3])
def test_bad_block_size(bad):
    X = gaussian(100)
    with pytest.raises(ParameterError, match="block_size"):
        MDAV(5, block_size=bad).fit(X)


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_bad_n_jobs(bad):
    with pytest.raises(ParameterError, match="n_jobs"):
        VMDAV(5, block_size=20, n_jobs=bad).fit(gaussian(100))


@pytest.mark.parametrize("model, match", [(PCL(3, speed=5.0, block_size=30), "speed"),
                                          (PCL(3, kicks=-1, block_size=30), "kicks"),
                                          (PCL(3, init="ward", block_size=30), "init"),
                                          (VMDAV(3, gamma=-1.0, block_size=30), "gamma")])
def test_method_parameters_are_checked_before_any_block(monkeypatch, model, match):
    import probanon.microagg.blocks as blocks

    def no_cut(*args, **kwargs):
        raise AssertionError("the data were cut before the parameters were checked")

    monkeypatch.setattr(blocks, "cut_tree", no_cut)
    with pytest.raises(ParameterError, match=match):
        model.fit(gaussian(100))


def test_small_files_are_not_blocked_by_default():
    model = MDAV(5).fit(gaussian(300))
    assert model.function_.kind == "ordered-balls" and model.n_blocks_ == 1 and model.block_size_ == 0
    assert "not blocked" in model.blocks_


# ---------------------------------------------------------------- malformed JSON


@pytest.fixture(scope="module")
def blocked_spec():
    return json.loads(MDAV(3, block_size=20, n_jobs=1).fit(gaussian(60, d=2, seed=8)).function_.to_json())


def _first(nodes, split):
    return next(i for i, node in enumerate(nodes) if ("axis" in node) == split)


def _set(i_of, **values):
    return lambda n, d: n[i_of(n)].update(values)


def _split(n):
    return _first(n, True)


def _leaf(n):
    return _first(n, False)


def _last_leaf(n):
    return max(i for i, node in enumerate(n) if "kind" in node)


MUTATIONS = {
    "no nodes": lambda n, d: d["rule"].pop("nodes"),
    "empty nodes": lambda n, d: d["rule"].update(nodes=[]),
    "node not an object": lambda n, d: n.__setitem__(_split(n), [1, 2]),
    "nan threshold": _set(_split, threshold="NaN"),
    "text threshold": _set(_split, threshold="0.5"),
    "bool threshold": _set(_split, threshold=True),
    "axis wrong width": _set(_split, axis=[1.0, 0.0, 0.0]),
    "axis not numeric": _set(_split, axis=["a", "b"]),
    "child backwards": lambda n, d: n[_split(n)].update(left=_split(n)),
    "child out of range": lambda n, d: n[_split(n)].update(right=len(n)),
    "child twice": lambda n, d: n[_split(n)].update(right=n[_split(n)]["left"]),
    "child float": lambda n, d: n[_split(n)].update(left=float(n[_split(n)]["left"])),
    "extra key": _set(_split, extra=1),
    "leaf kind blocked": _set(_leaf, kind="blocked"),
    "leaf kind intervals": _set(_leaf, kind="intervals"),
    "leaf rule missing array": lambda n, d: n[_leaf(n)]["rule"].pop("radius2"),
    "leaf offset negative": _set(_leaf, offset=-1),
    "leaf offsets overlap": _set(_last_leaf, offset=0),
    "leaf offset gap": _set(_leaf, offset=1),
    "sizes one short": lambda n, d: (d["sizes"].pop(), d["centroids"].pop()),
}


@pytest.mark.parametrize("case", list(MUTATIONS))
def test_malformed_blocked_json(blocked_spec, case):
    assert function_from_json(json.dumps(blocked_spec)).kind == "blocked"
    bad = json.loads(json.dumps(blocked_spec))
    MUTATIONS[case](bad["rule"]["nodes"], bad)
    with pytest.raises(SpecificationError) as err:
        function_from_json(json.dumps(bad))
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------- CLI


def test_cli_block_size(tmp_path, capsys):
    rng = np.random.default_rng(0)
    n = 800
    frame = pd.DataFrame({"a": rng.normal(50, 10, n), "b": rng.normal(size=n), "c": rng.uniform(0, 9, n),
                          "secret": rng.normal(size=n)})
    path, out, func = tmp_path / "in.csv", tmp_path / "out.csv", tmp_path / "f.json"
    frame.to_csv(path, index=False)
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "5", "--keys", "a,b,c", "--confidential",
                 "secret", "--block-size", "100", "--function", str(func), "--keep-order", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"blocked: 8 blocks of at most 100 records \(100\.\.100\)", err), err
    released = pd.read_csv(out)
    assert released.groupby(["a", "b", "c"]).size().min() >= 5
    f = function_from_json(func)
    assert f.kind == "blocked" and f.meta["blocks"] == 8
    # the published function puts every record in the cell whose centroid it was released with
    X = frame[["a", "b", "c"]].to_numpy()
    np.testing.assert_allclose(np.asarray(f.centroids)[f.assign(X)], released[["a", "b", "c"]].to_numpy(), rtol=1e-12)
    # not blocked: stated too
    assert main(["microaggregate", str(path), "-o", str(tmp_path / "o2.csv"), "-k", "5", "--keys", "a,b,c",
                 "--confidential", "secret", "--quiet"]) == 0
    assert "not blocked" in capsys.readouterr().err
    # bad values: one line, status 2
    for bad, message in [("3", "at least 2k = 10"), ("-5", "at least 2k = 10")]:
        assert main(["microaggregate", str(path), "-o", str(tmp_path / "o3.csv"), "-k", "5", "--keys", "a,b,c",
                     "--confidential", "secret", "--block-size", bad, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert message in err and err.strip().count("\n") == 0, err
    assert main(["microaggregate", str(path), "-o", str(tmp_path / "o4.csv"), "-k", "5", "--keys", "a,b,c",
                 "--confidential", "secret", "--block-size", "100", "--method", "ranking", "--quiet"]) == 2
    assert "--block-size applies to mdav, vmdav and pcl" in capsys.readouterr().err
