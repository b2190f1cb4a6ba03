"""Estimator contract shared by the microaggregation methods (scikit-learn's).

Options are constructor parameters (``get_params``/``set_params``/``clone`` from
:class:`sklearn.base.BaseEstimator`), declared with the forms they accept in
``_parameter_constraints`` and checked once when ``fit`` starts
(:func:`probanon._validation.check_params`); what depends on the data (``sample_weight``,
``strata``) is given to ``fit``. One ``fit`` for every case, in three steps:

1. prepare (:meth:`Microaggregator._prepare`): X checked once (the private steps after it
   assume valid arrays), categorical keys embedded (:mod:`.mixed`), the records standardised
   (population sd; constant columns are only centred), their strata grouped (:mod:`.strata`)
   and, with ``missing="pattern"``, their patterns of missing keys (:mod:`.missing`);
2. partition (:meth:`Microaggregator._partition_records`): the method's own partition of all
   the records, in blocks when large (:mod:`.blocks`), or of each stratum or missing-value
   pattern as a file of its own;
3. publish (:meth:`Microaggregator._publish`): ``labels_``, ``centroids_`` (original units; with
   sampling weights ``fit(X, sample_weight=w)``, each group's weighted mean, so that the
   weighted totals sum_i w_i x_i are kept within every group; the partition itself treats
   every record alike), ``sizes_`` and ``function_`` (the publishable
   :class:`~probanon.microagg.function.MicroaggregationFunction`).

``transform(X)`` applies the fitted function to any records; ``fit_transform(X)`` returns the
fitted records replaced by their group centroid.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin

from .._output import OutputMixin
from .._validation import (BOOLEAN, NONE, Constraint, check_k, check_matrix, check_params, check_weights,
                           integer, is_numeric_column, names, one_of)
from ..data import MISSING_HINT, Standardizer, select_columns
from ..errors import AdjustmentWarning, InputError, NotFittedError, ParameterError
from ..progress import quiet as _quiet
from .blocks import DEFAULT_BLOCK as DEFAULT_BLOCK_SIZE, block_size_for, blocks_note, fit_blocks
from .function import publish_function
from .means import group_means, observed_standardizer, released_means
from .missing import POLICIES, pattern_sets_within
from .mixed import Encoding
from .potentials import split_duplicates
from .settle import settle_power, settle_sites
from .strata import group_strata, stratum_label, strata_of


def _no_blocks(value, params) -> bool:
    return integer(0).test(value, params) and value == 0


def _blocks_of(value, params) -> bool:
    return integer(1).test(value, params) and value >= 2 * int(params["k"])


def _is_levels(value, params) -> bool:
    return isinstance(value, dict) and all(isinstance(c, str) and (v is None or isinstance(v, (list, tuple)))
                                           for c, v in value.items())


#: the constructor parameters every microaggregator declares (each method adds its own)
CONSTRAINTS = {
    "k": [integer(1, integral_reals=True)],
    "block_size": [NONE, Constraint("0 (no blocks)", _no_blocks),
                   Constraint(lambda p: f"an integer of at least 2k = {2 * int(p['k'])}", _blocks_of)],
    "n_jobs": [NONE, integer(1)],
    "nominal": [names()],
    "ordinal": [names(), Constraint("a dict {column: [levels in order] or None}", _is_levels)],
    "missing": [one_of(*POLICIES)],
    "merge_small_strata": [BOOLEAN],
}

#: fitted attributes that only some fits set: dropped when a fit starts, so a refit keeps none
#: of an earlier one
_OCCASIONAL = ("feature_names_in_", "households_", "strata_", "strata_merged_", "missing_merged_", "missing_patterns_",
               "partition_", "unpublished_", "block_size_", "n_blocks_", "block_sizes_", "blocks_", "start_")


@dataclass(frozen=True)
class Prepared:
    """What the preparation step of ``fit`` gives the partition and publish steps.

    ``X`` the keys as numbers (numeric keys as they are; with categorical keys their
    embedding, :mod:`.mixed`), NaN where a key is missing (``missing="pattern"``); ``Z`` its
    standardised form (C-contiguous); ``weights`` the checked sampling weights or None;
    ``frame`` the DataFrame of keys (categorical fits: the released categories come from it)
    and ``encoding`` its :class:`.mixed.Encoding` (None for numeric keys); ``lacking``
    (records x keys, True where missing) and ``widths`` (embedded columns per key) for a fit
    by missing-value patterns, else None; ``stratum`` (stratum of each record), ``strata``
    (the value tuples of each stratum) and ``strata_columns`` (their names, or None) with
    strata, else None."""

    X: np.ndarray
    Z: np.ndarray
    weights: np.ndarray | None
    frame: pd.DataFrame | None = None
    encoding: Encoding | None = None
    lacking: np.ndarray | None = None
    widths: list | None = None
    stratum: np.ndarray | None = None
    strata: list | None = None
    strata_columns: list | None = None


class Microaggregator(OutputMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Base class: subclasses implement ``_partition(Z, X, progress) -> (labels, function
    kind, rule)`` (Z standardised, X the original values or None, ``progress`` a callable, see
    :meth:`fit`), and declare their parameters in ``_parameter_constraints``.

    Options (constructor): ``nominal``, ``ordinal``: categorical keys of the DataFrame X
    (:mod:`.mixed`): Gower-type distances, each group's mode (nominal) or median level
    (ordinal) released, never a category absent from the group; ``centroids_`` is then an
    object array and the function carries the encoding. ``missing``: "raise" (default)
    refuses a missing key value; "pattern" groups the records by the keys they lack
    (:mod:`.missing`): each group's released value of a key some member lacks is missing, and
    the fit publishes no function (``function_`` is None). ``merge_small_strata``: a stratum
    of fewer than k records is merged into its neighbour (``strata_merged_`` says how) instead
    of refused.

    A blockable method (class attribute ``_blockable``: MDAV, V-MDAV, PCL) takes strata,
    categorical keys and missing-value patterns, and fits in blocks (:mod:`.blocks`) by its
    parameters ``block_size`` and ``n_jobs``: ``block_size=None`` blocks automatically (none
    below 200,000 records, then blocks of at most ``_default_block_size`` records: 500,000, or
    32,000 for PCL), 0 never, an integer B >= 2k into blocks of k..B records; ``n_jobs``
    worker processes (None: every core this process may use; the result does not depend on
    it). Fitted: ``block_size_`` (B, 0 when not blocked), ``n_blocks_``, ``block_sizes_``
    (records per block) and ``blocks_`` (a one-line statement); a blocked fit publishes a
    function of kind "blocked" (the cut tree and one rule per block).
    """

    _parameter_constraints = CONSTRAINTS
    _blockable = False
    _default_block_size = DEFAULT_BLOCK_SIZE

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.missing == "pattern"
        return tags

    def _validate_params(self) -> None:
        """The declared constraints (``_parameter_constraints``), checked once when ``fit`` starts."""
        check_params(self)

    # ------------------------------------------------------------------ fit: prepare, partition, publish

    def fit(self, X, y=None, *, sample_weight=None, strata=None, progress=None, households=None):
        """Partition the records of X (array or DataFrame; see the module docstring).

        ``sample_weight``: sampling weights (n numbers > 0): the centroids are the groups'
        weighted means x_g = sum_{i in g} w_i x_i / sum_{i in g} w_i (sdcMicro's weighted
        microaggregation); the cells, and so the published function's rule, do not depend on
        them. ``strata``: each record's stratum (a DataFrame of strata columns, or n values or
        rows): the method runs within each stratum (:mod:`.strata`), no group mixes strata, and
        the function has kind "stratified"; a stratum of fewer than k records is an error
        unless ``merge_small_strata``. Fitted ``strata_``: the value tuples of each stratum.

        ``progress``, if given, is called as ``progress(stage, done, total)``: ``stage`` a
        short label of the current step (e.g. "MDAV", "Lloyd"), ``done`` of ``total`` units of
        that stage done; a new label starts a new stage. It is called at least once before the
        work starts (and before any numba compilation), so a caller can show a first message;
        without it the fit prints nothing.

        ``households``: the household id of each record (issue 43.5,
        :func:`probanon.households.by_household`): the keys are household-level variables, each
        constant within every household (else an InputError naming the household and key), no
        household straddles a stratum and ``sample_weight`` is the household's; the method runs on
        one record per household, so every group holds at least k households. ``labels_`` then
        gives every record its household's group (members share their released values),
        ``sizes_`` and ``records_settled_`` count households, and ``households_`` is the
        :class:`~probanon.households.Households` view."""
        self._validate_params()
        for stale in _OCCASIONAL:
            self.__dict__.pop(stale, None)
        self.records_settled_ = 0
        if households is not None:
            from ..households import by_household

            view = by_household(X, households, strata=strata, sample_weight=sample_weight)
            X, sample_weight, strata = view.X, view.sample_weight, view.strata
        data = self._prepare(X, sample_weight, strata)
        labels, kind, rule = self._partition_records(data, _quiet if progress is None else progress)
        self._publish(data, labels, kind, rule)
        if households is not None:
            self.households_ = view
            self.labels_ = view.expand(self.labels_)
        return self

    def _prepare(self, X, sample_weight, strata) -> Prepared:
        """Step 1 of ``fit``: the checked keys, embedded and standardised, the weights, the
        strata and the missing-value patterns (:class:`Prepared`); sets ``k_``,
        ``n_features_in_``, ``feature_names_in_`` (fitted on a DataFrame) and ``standardizer_``."""
        categorical = bool(len(self.nominal) or len(self.ordinal))
        E, encoding, lacking, widths = self._categorical_keys(X) if categorical else self._numeric_keys(X)
        n = E.shape[0]
        w = None if sample_weight is None else check_weights(sample_weight, n, "sample_weight", sample_weight)
        self.n_features_in_ = len(encoding.columns) if categorical else E.shape[1]
        if categorical:  # numbers and ordinal ranks z-scored (observed values), nominal indicators as they are
            self.standardizer_ = encoding.standardizer(E)
        else:  # unweighted: the groups do not depend on the weights
            self.standardizer_ = Standardizer.fit_valid(E) if lacking is None else observed_standardizer(E)
        self.k_ = check_k(self.k, n)  # the parameter itself stays as given
        stratum = groups = columns = None
        if strata is not None:
            self._needs_blocks("strata")
            columns, values = strata_of(strata, n)
            stratum, groups, self.strata_merged_ = group_strata(values, self.k_, bool(self.merge_small_strata))
            self.strata_ = groups
        Z = np.ascontiguousarray(self.standardizer_.transform(E))
        return Prepared(E, Z, w, X if categorical else None, encoding, lacking, widths, stratum, groups, columns)

    def _numeric_keys(self, X):
        """(keys checked, None, lacking, widths) of numeric keys: ``lacking`` (True where a key is
        missing) and ``widths`` (one column per key) for a fit by missing-value patterns, else None."""
        E = self._validate_input(X)
        if self.missing == "pattern" and np.isnan(E).any():
            self._needs_blocks("missing='pattern'")
            return E, None, np.isnan(E), np.ones(E.shape[1], np.int64)
        return E, None, None, None

    def _categorical_keys(self, frame):
        """(embedding, :class:`.mixed.Encoding`, lacking, widths) of the keys of the DataFrame
        ``frame`` with categorical ones (:mod:`.mixed`); ``lacking`` (records x keys) and ``widths``
        (embedded columns per key) for a fit by missing-value patterns, else None."""
        if not isinstance(frame, pd.DataFrame):
            raise ParameterError("categorical keys need a DataFrame X (columns by name)")
        self._needs_blocks("categorical keys")
        pattern = self.missing == "pattern" and bool(frame.isna().to_numpy().any())
        encoding = Encoding.fit(frame, self.nominal, self.ordinal, missing=pattern)
        V = encoding.values(frame, missing=pattern)
        self.feature_names_in_ = list(encoding.columns)
        return encoding.embed_values(V), encoding, np.isnan(V) if pattern else None, \
            encoding.widths() if pattern else None

    def _needs_blocks(self, what: str) -> None:
        if not self._blockable:
            raise ParameterError(f"{what} {'is' if what.startswith('missing') else 'are'} available for MDAV, V-MDAV "
                                 f"and PCL, not {type(self).__name__}")

    def _validate_input(self, X) -> np.ndarray:
        """The numeric quasi-identifier matrix, checked once (finite unless
        ``missing="pattern"``, which allows NaN); a DataFrame's columns are all keys (a text
        column is refused, naming every one: select the keys, or declare categorical ones with
        ``nominal=``/``ordinal=``), their names recorded in ``feature_names_in_``
        (scikit-learn's convention; absent after a fit on an array)."""
        if isinstance(X, pd.DataFrame):
            text = [str(c) for c in X.columns if not is_numeric_column(X[c])]
            if text:
                shown = ", ".join(text[:10]) + (f" (+{len(text) - 10} more)" if len(text) > 10 else "")
                raise InputError(f"X has columns that are not numbers: {shown}; every column of X is a key: select "
                                 "the keys (X[[...]]), and name categorical ones with nominal= or ordinal=")
            cols = select_columns(X)
            self.feature_names_in_ = list(cols)
            X = X[cols]
        return check_matrix(X, name="data", missing=self.missing == "pattern", hint=MISSING_HINT, two_d=True)

    def _partition_records(self, data: Prepared, progress):
        """Step 2 of ``fit``: (labels, function kind, rule) of the prepared records: by their
        missing-value patterns (kind None: no function), within their strata (kind
        "stratified"), or all together (in blocks when large)."""
        if data.lacking is not None:
            return self._pattern_partition(data, progress), None, None
        if data.stratum is not None:
            return self._stratified_partition(data, progress)
        return self._blocked_partition(data.Z, data.X, progress)

    def _publish(self, data: Prepared, labels, kind, rule) -> None:
        """Step 3 of ``fit``: ``labels_``, ``centroids_``, ``sizes_`` and ``function_`` (the
        fitted rule), or None with the reason in ``unpublished_``: a fit by missing-value
        patterns (its cells depend on which keys a record lacks), or a partition that splits
        identical records, which no function of the keys can do (issue 39.1: classical MDAV,
        ``keep_duplicates=False``; individual ranking with ``keep_ties=False``). Every other
        method's partition is the rule's own (:meth:`_settled_partition`), so ``transform`` on
        the fitted records gives ``fit_transform``'s values."""
        X, w, encoding = data.X, data.weights, data.encoding
        self.labels_ = labels
        if kind == "intervals":
            self.centroids_ = [group_means(X[:, [j]], labels[:, j], labels[:, j].max() + 1, w)[:, 0]
                               for j in range(X.shape[1])]
            self.sizes_ = [np.bincount(labels[:, j]) for j in range(X.shape[1])]
        else:
            n_groups = int(labels.max()) + 1
            if encoding is not None:
                self.centroids_ = encoding.released(data.frame, labels, w)
            elif data.lacking is not None:
                self.centroids_ = released_means(X, labels, w)
            else:
                self.centroids_ = group_means(X, labels, n_groups, w)
            self.sizes_ = np.bincount(labels, minlength=n_groups)
        if data.lacking is not None:
            self.function_ = None
            self.unpublished_ = "a fit with missing='pattern' publishes no function"
            suppressed = int((pd.isna(self.centroids_)[labels] & ~data.lacking).sum())  # (module .missing, step 4)
            warnings.warn(f"missing key values: {int(data.lacking.sum())} kept missing, {suppressed} more suppressed "
                          "so that every group agrees on each released value", AdjustmentWarning, stacklevel=4)
            return
        split = self._identical_split(data.Z, data.stratum)
        if split:
            self.function_ = None
            self.unpublished_ = (f"{type(self).__name__} split {split:,} identical records between groups "
                                 f"({self._split_option}), so no published function can reproduce its groups")
            return
        meta = {"method": type(self).__name__, "k": self.k_, "n_records": int(X.shape[0]), "weighted": w is not None}
        if encoding is not None:  # (the meta of a categorical fit names the keys, not its blocks or strata)
            meta.update(nominal=list(encoding.nominal), ordinal=list(encoding.ordinal))
        elif kind == "blocked":
            meta.update(blocks=self.n_blocks_, block_size=self.block_size_)
        elif kind == "stratified":
            meta.update(strata=len(self.strata_))
        columns = list(encoding.columns) if encoding is not None else getattr(self, "feature_names_in_", None)
        self.function_ = publish_function(kind, rule, standardizer=self.standardizer_, centroids=self.centroids_,
                                          sizes=self.sizes_, columns=columns, encoding=encoding, meta=meta)

    #: the parameter that lets the method split identical records (None: it never does)
    _split_option = None

    def _identical_split(self, Z, stratum=None) -> int:
        """Records that have an identical record in another group (0 unless the method was
        asked to split them, :attr:`_split_option`); records of different strata (``stratum``)
        are not identical."""
        if self._split_option is None or self._keeps_identical():
            return 0
        if stratum is not None:
            Z = np.column_stack([Z, stratum])
        if self.labels_.ndim == 2:  # one group per column (individual ranking)
            return int(sum(split_duplicates(Z[:, [j]], self.labels_[:, j]).sum() for j in range(Z.shape[1])))
        return int(split_duplicates(Z, self.labels_).sum())

    def _keeps_identical(self) -> bool:
        return True

    # ------------------------------------------------------------------ the partition step

    def _pattern_partition(self, data: Prepared, progress) -> np.ndarray:
        """The labels of a fit by missing-value patterns (:mod:`.missing`, steps 1-3), within
        each stratum: sets ``missing_patterns_``, ``missing_merged_`` and ``blocks_``."""
        stratum = np.zeros(data.X.shape[0], np.int64) if data.stratum is None else data.stratum
        which, observed, self.missing_merged_ = pattern_sets_within(
            data.lacking, stratum, self.k_, getattr(self, "feature_names_in_", None),
            None if data.strata is None else [stratum_label(g) for g in data.strata])
        columns = [np.repeat(seen, data.widths) for seen in observed]
        labels, _ = self._partition_subsets(data.Z, data.X, which, columns, "missing-value pattern", progress)
        self.missing_patterns_ = len(observed)
        self.blocks_ = ("" if data.strata is None else f"{len(data.strata)} strata, ") + \
            f"{len(observed)} missing-value patterns"
        return labels

    def _stratified_partition(self, data: Prepared, progress):
        """The partition within each stratum (:mod:`.strata`): (labels, "stratified", rule)."""
        groups = data.strata
        labels, fitted = self._partition_subsets(data.Z, data.X, data.stratum, [None] * len(groups), "stratum",
                                                 progress)
        rules = [{"values": stratum, **fit} for stratum, fit in zip(groups, fitted)]
        self.blocks_ = f"{len(groups)} strata" + ("" if self.n_blocks_ == len(groups) else
                                                 f", {self.n_blocks_} blocks of at most {self.block_size_:,} records")
        return labels, "stratified", {"columns": data.strata_columns, "strata": rules}

    def _partition_subsets(self, Z, X, which, columns, what: str, progress):
        """The partition of each subset of records (``which``: subset of each record), on its
        ``columns`` (a boolean mask, or None for all), each as a file of its own (blocked if
        large); a subset with no column is cut into groups of k..2k-1 (its records are alike).
        Returns (labels numbered across the subsets, [{"kind", "rule", "offset"} per subset]);
        sets ``block_sizes_`` and ``n_blocks_`` over all subsets."""
        labels, offset, sizes, fitted = np.empty(Z.shape[0], np.int64), 0, [], []
        for s, cols in enumerate(columns):
            rows = np.flatnonzero(which == s)
            progress(f"{what} {s + 1} of {len(columns)}", 0, 1)
            if cols is not None and not cols.any():
                local, kind, rule = np.minimum(np.arange(rows.size) // self.k_, rows.size // self.k_ - 1), None, None
                self.block_sizes_ = np.array([rows.size])
            else:
                pick = np.ix_(rows, cols) if cols is not None else rows
                local, kind, rule = self._blocked_partition(np.ascontiguousarray(Z[pick]), X[pick], progress)
            labels[rows] = offset + local
            fitted.append({"kind": kind, "rule": rule, "offset": offset})
            offset += int(local.max()) + 1
            sizes.append(self.block_sizes_)
        self.block_sizes_ = np.concatenate(sizes)
        self.n_blocks_ = int(self.block_sizes_.size)
        return labels, fitted

    def _blocked_partition(self, Z, X, progress):
        """``_partition`` on all of Z, or per block when ``block_size`` says so (class docstring)."""
        if not self._blockable:
            return self._partition(Z, X, progress)
        n = Z.shape[0]
        B = block_size_for(self.block_size, self.k_, n, self._default_block_size)
        if B == 0:
            self.block_size_, self.n_blocks_, self.block_sizes_ = 0, 1, np.array([n])
            self.blocks_ = blocks_note(1, 0, self.block_sizes_)
            return self._settled_partition(Z, X, progress)
        self.__dict__.pop("partition_", None)  # MDAV's unblocked partition: none after a blocked fit
        labels, rule, sizes, attributes = fit_blocks(self, Z, B, progress, self.n_jobs)
        self.block_size_, self.n_blocks_, self.block_sizes_ = B, int(sizes.size), sizes
        self.blocks_ = blocks_note(self.n_blocks_, B, sizes)
        self.records_settled_ += attributes.pop("records_settled_", 0)
        self.__dict__.update(attributes)
        return labels, "blocked", rule

    def _settled_partition(self, Z, X, progress):
        """``_partition``, then, for a power diagram, the diagram settled on the records
        (:func:`.settle.settle_sites`): the labels become the published rule's own cells, each
        of at least k records, and, where the sites are means of groups of records
        (:meth:`_sites_are_group_means`), the cells' means (the released values), so the rule
        publishes nothing beyond the release. Adds the records it moved to ``records_settled_``."""
        labels, kind, rule = self._partition(Z, X, progress)
        if kind != "power-diagram":
            return labels, kind, rule
        progress("settle", 0, 1)
        settle = settle_sites if self._sites_are_group_means() else settle_power
        settled = settle(Z, rule["centers"], rule["offsets"], self.k_, labels)
        progress("settle", 1, 1)
        self.records_settled_ = getattr(self, "records_settled_", 0) + settled.moved
        return settled.labels, kind, {"centers": settled.centers, "offsets": settled.offsets}

    def _sites_are_group_means(self) -> bool:
        """Whether the method's power-diagram sites are means of groups of its records (then a
        settled diagram moves them to its own cells' means, :func:`.settle.settle_sites`: a site
        that is the mean of other records than its cell's gives records away); sites that are
        not (PCL's large cells: Levenberg-Marquardt iterates) are kept as they are."""
        return True

    # ------------------------------------------------------------------ transform

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """The released columns: the keys, as fitted (scikit-learn's ``OneToOneFeatureMixin``;
        an array of names, ``feature_names_in_`` staying the list it is)."""
        return np.asarray(super().get_feature_names_out(input_features), dtype=object)

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "function_")

    def _check_fitted(self):
        if not hasattr(self, "function_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit first")

    def transform(self, X, strata=None):
        """Records replaced by the centroid of the cell the fitted function assigns them to.
        Fitted on a DataFrame, the function carries its names (``feature_names_in_``) and
        reads a DataFrame by name (extra columns ignored, a missing one an InputError); a
        Series is one record (see :meth:`MicroaggregationFunction.assign`). Fitted with
        strata: ``strata`` of the records (or their strata columns in the DataFrame X). A
        DataFrame X gives a DataFrame (its index, the keys' names; :meth:`set_output`)."""
        self._check_fitted()
        if self.function_ is None:
            raise NotFittedError(f"{self.unpublished_}: transform is not available")
        if not isinstance(X, (pd.DataFrame, pd.Series)):  # an array: positional (scikit-learn's contract)
            X = self._positional(X)
        return self._wrap_output(self.function_.transform(X, strata), X, getattr(self, "feature_names_in_", None))

    def _positional(self, X):
        """Records given as an array (no names): refused when 1-D or sparse, or when their width
        is not the fitted one (scikit-learn's messages); the function checks their values."""
        if hasattr(X, "toarray") or hasattr(X, "tocsr"):
            raise InputError(f"{type(self).__name__}.transform: a sparse matrix X is not supported: give a dense "
                             "table (X.toarray())")
        try:
            X = np.asarray(X)
        except ValueError:
            raise InputError("records: X is not a table of numbers") from None
        if X.ndim == 1:
            raise InputError("records must be a 2-D table (records x keys), got a 1-D array: Reshape your data "
                             "either using X.reshape(-1, 1) if it has a single key or X.reshape(1, -1) if it is "
                             "a single record (or give the record as a pandas Series)")
        if X.ndim == 2 and X.shape[1] != self.n_features_in_:
            raise InputError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        return X

    def fit_transform(self, X, y=None, *, sample_weight=None, strata=None, progress=None, households=None):
        """Fit, then return every fitted record replaced by its group centroid (NaN where
        ``missing="pattern"`` releases a key missing; with ``households``, every member their
        household's). A DataFrame X gives a DataFrame with its index and the keys' names
        (:meth:`set_output`)."""
        self.fit(X, sample_weight=sample_weight, strata=strata, progress=progress, households=households)
        if isinstance(self.centroids_, list):
            values = np.column_stack([c[self.labels_[:, j]] for j, c in enumerate(self.centroids_)])
        else:
            values = self.centroids_[self.labels_]
        return self._wrap_output(values, X, getattr(self, "feature_names_in_", None))
