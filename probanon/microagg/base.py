"""Estimator contract shared by the microaggregation methods (scikit-learn style).

``fit(X)`` standardises the quasi-identifiers (population sd; constant columns are only
centred), partitions the records and sets ``labels_``, ``centroids_`` (original units; with
sampling weights ``fit(X, weights=w)``, each group's weighted mean, so that the weighted totals
sum_i w_i x_i are kept within every group; the partition itself treats every record alike),
``sizes_``, ``standardizer_`` and ``function_`` (the publishable
:class:`~probanon.microagg.function.MicroaggregationFunction`). ``transform(X)`` applies the
fitted function to any records; ``fit_transform(X)`` returns the fitted records replaced by
their group centroid.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._params import ParamsMixin
from .._validation import check_k, check_matrix, check_weights, is_numeric_column
from ..data import MISSING_HINT, Standardizer, select_columns
from ..errors import InputError, NotFittedError, ParameterError
from ..progress import quiet as _quiet
from .blocks import DEFAULT_BLOCK as DEFAULT_BLOCK_SIZE, blocks_note, check_block_size, check_jobs, fit_blocks
from .function import publish_function
from .means import group_means  # noqa: F401 - the methods read it from here too
from .potentials import split_duplicates
from .settle import settle_power, settle_sites
from .missing import check_policy, fit_mixed, fit_numeric
from .mixed import Encoding


class Microaggregator(ParamsMixin):
    """Base class: subclasses implement ``_partition(Z, X, progress) -> (labels, function
    kind, rule)`` (Z standardised, X the original values or None, ``progress`` a callable, see
    :meth:`fit`).

    A subclass with the parameters ``block_size`` and ``n_jobs`` fits in blocks
    (:mod:`.blocks`): ``block_size=None`` blocks automatically (none below 200,000 records,
    then blocks of at most ``_default_block_size`` records: 500,000, or 32,000 for PCL), 0 never, an integer B >= 2k into
    blocks of k..B records; ``n_jobs`` worker processes (None: every core this process may
    use; the result does not depend on it). Fitted: ``block_size_`` (B, 0 when not blocked),
    ``n_blocks_``, ``block_sizes_`` (records per block) and ``blocks_`` (a one-line statement);
    a blocked fit publishes a function of kind "blocked" (the cut tree and one rule per block).
    """

    _default_block_size = DEFAULT_BLOCK_SIZE

    def _validate_input(self, X, missing: str = "raise"):
        """The quasi-identifier matrix; a DataFrame's columns are all keys (a text column is
        refused, naming every one: select the keys, or declare categorical ones with
        ``nominal=``/``ordinal=``), their names recorded in ``feature_names_in_``
        (scikit-learn's convention; absent after a fit on an array, so a refit never keeps
        stale names)."""
        self.__dict__.pop("feature_names_in_", None)
        if isinstance(X, pd.DataFrame):
            text = [str(c) for c in X.columns if not is_numeric_column(X[c])]
            if text:
                shown = ", ".join(text[:10]) + (f" (+{len(text) - 10} more)" if len(text) > 10 else "")
                raise InputError(f"X has columns that are not numbers: {shown}; every column of X is a key: select "
                                 "the keys (X[[...]]), and name categorical ones with nominal= or ordinal=")
            cols = select_columns(X)
            self.feature_names_in_ = list(cols)
            X = X[cols]
        return check_matrix(X, name="data", missing=missing == "pattern", hint=MISSING_HINT)

    def fit(self, X, y=None, *, weights=None, strata=None, merge_small_strata=False, missing="raise", nominal=(),
            ordinal=(), progress=None):
        """Partition the records of X (array or DataFrame; see the module docstring).

        ``weights``: sampling weights (n numbers > 0): the centroids are the groups' weighted
        means x_g = sum_{i in g} w_i x_i / sum_{i in g} w_i (sdcMicro's weighted
        microaggregation); the cells, and so the published function's rule, do not depend on
        them. ``strata``: each record's stratum (a DataFrame of strata columns, or n values or
        rows): the method runs within each stratum (:mod:`.strata`), no group mixes strata, and
        the function has kind "stratified"; a stratum of fewer than k records is an error
        unless ``merge_small_strata`` (then merged into its neighbour; ``strata_merged_`` says
        how). Fitted ``strata_``: the value tuples of each stratum. ``missing``: "raise"
        (default) refuses a missing key value; "pattern" groups the records by the keys they
        lack (:mod:`.missing`): each group's released value of a key some member lacks is
        missing, and the fit publishes no function (``function_`` is None). ``nominal``,
        ``ordinal``: categorical keys of the DataFrame X (:mod:`.mixed`): Gower-type distances,
        each group's mode (nominal) or median level (ordinal) released, never a category absent
        from the group; ``centroids_`` is then an object array and the function carries the
        encoding.

        ``progress``, if given, is called as ``progress(stage, done, total)``: ``stage`` a
        short label of the current step (e.g. "MDAV", "Lloyd"), ``done`` of ``total`` units of
        that stage done; a new label starts a new stage. It is called at least once before the
        work starts (and before any numba compilation), so a caller can show a first message;
        without it the fit prints nothing."""
        for stale in ("strata_", "strata_merged_", "missing_merged_", "missing_patterns_"):
            self.__dict__.pop(stale, None)
        self.records_settled_ = 0
        if nominal or ordinal:
            return self._fit_mixed(X, weights, strata, merge_small_strata, missing, nominal, ordinal,
                                   _quiet if progress is None else progress)
        X = self._validate_input(X, check_policy(missing))
        w = None if weights is None else check_weights(weights, X.shape[0], "weights", weights)
        if missing == "pattern" and np.isnan(X).any():
            return self._fit_patterns(X, w, strata, merge_small_strata, _quiet if progress is None else progress)
        self.k_ = check_k(self.k, X.shape[0])  # the parameter itself stays as given
        self.n_features_in_ = X.shape[1]
        self.standardizer_ = Standardizer.fit(X)
        Z = np.ascontiguousarray(self.standardizer_.transform(X))
        progress = _quiet if progress is None else progress
        if strata is None:
            self.__dict__.pop("strata_", None)
            self.__dict__.pop("strata_merged_", None)
            labels, kind, rule = self._blocked_partition(Z, X, progress)
        else:
            labels, kind, rule = self._stratified_partition(Z, X, strata, bool(merge_small_strata), progress)
        self.labels_ = labels
        if kind == "intervals":
            self.centroids_ = [group_means(X[:, [j]], labels[:, j], labels[:, j].max() + 1, w)[:, 0]
                               for j in range(X.shape[1])]
            self.sizes_ = [np.bincount(labels[:, j]) for j in range(X.shape[1])]
        else:
            n_groups = int(labels.max()) + 1
            self.centroids_ = group_means(X, labels, n_groups, w)
            self.sizes_ = np.bincount(labels, minlength=n_groups)
        self._publish(Z, kind, rule, getattr(self, "feature_names_in_", None), None,
                      {"method": type(self).__name__, "k": self.k_, "n_records": int(X.shape[0]),
                       "weighted": w is not None,
                       **({"blocks": self.n_blocks_, "block_size": self.block_size_} if kind == "blocked" else {}),
                       **({"strata": len(self.strata_)} if kind == "stratified" else {})})
        return self

    def _publish(self, Z, kind, rule, columns, encoding, meta) -> None:
        """``function_``: the fitted rule, or None (with the reason in ``unpublished_``) when
        the partition splits identical records, which no function of the keys can do (issue
        39.1: classical MDAV, ``keep_duplicates=False``; individual ranking with
        ``keep_ties=False``). Every other method's partition is the rule's own
        (:meth:`_settled_partition`), so ``transform`` on the fitted records gives
        ``fit_transform``'s values."""
        self.__dict__.pop("unpublished_", None)
        split = self._identical_split(Z)
        if split:
            self.function_ = None
            self.unpublished_ = (f"{type(self).__name__} split {split:,} identical records between groups "
                                 f"({self._split_option}), so no published function can reproduce its groups")
            return
        self.function_ = publish_function(kind, rule, standardizer=self.standardizer_, centroids=self.centroids_,
                                          sizes=self.sizes_, columns=columns, encoding=encoding, meta=meta)

    #: the parameter that lets the method split identical records (None: it never does)
    _split_option = None

    def _identical_split(self, Z) -> int:
        """Records that have an identical record in another group (0 unless the method was
        asked to split them, :attr:`_split_option`)."""
        strata = self.__dict__.pop("_record_strata", None)
        if self._split_option is None or self._keeps_identical():
            return 0
        if strata is not None:
            Z = np.column_stack([Z, strata])
        if self.labels_.ndim == 2:  # one group per column (individual ranking)
            return int(sum(split_duplicates(Z[:, [j]], self.labels_[:, j]).sum() for j in range(Z.shape[1])))
        return int(split_duplicates(Z, self.labels_).sum())

    def _keeps_identical(self) -> bool:
        return True

    def _check_params(self):
        """Checks of the method's own parameters (beyond k), run before any work, blocks included."""

    def _fit_mixed(self, frame, weights, strata, merge, missing, nominal, ordinal, progress):
        """``fit`` with categorical keys (:mod:`.mixed`)."""
        if not isinstance(frame, pd.DataFrame):
            raise ParameterError("categorical keys need a DataFrame X (columns by name)")
        if "block_size" not in self._param_names:
            raise ParameterError(f"categorical keys are available for MDAV, V-MDAV and PCL, not {type(self).__name__}")
        if check_policy(missing) == "pattern" and frame.isna().to_numpy().any():  # issue 39: see missing.fit_mixed
            return fit_mixed(self, frame, weights, strata, bool(merge), nominal, ordinal, progress)
        self.__dict__.pop("feature_names_in_", None)
        encoding = Encoding.fit(frame, nominal, ordinal)
        E = encoding.embed(frame)
        w = None if weights is None else check_weights(weights, E.shape[0], "weights", weights)
        self.k_ = check_k(self.k, E.shape[0])
        self.n_features_in_ = len(encoding.columns)
        self.feature_names_in_ = list(encoding.columns)
        self.standardizer_ = encoding.standardizer(E)  # numbers and ordinal ranks z-scored; indicators as they are
        Z = np.ascontiguousarray(self.standardizer_.transform(E))
        if strata is None:
            self.__dict__.pop("strata_", None)
            labels, kind, rule = self._blocked_partition(Z, E, progress)
        else:
            labels, kind, rule = self._stratified_partition(Z, E, strata, bool(merge), progress)
        self.labels_ = labels
        self.centroids_ = encoding.released(frame, labels, w)
        self.sizes_ = np.bincount(labels)
        self._publish(Z, kind, rule, list(encoding.columns), encoding,
                      {"method": type(self).__name__, "k": self.k_, "n_records": int(E.shape[0]),
                       "weighted": w is not None, "nominal": list(encoding.nominal), "ordinal": list(encoding.ordinal)})
        return self

    def _fit_patterns(self, X, w, strata, merge, progress):
        """``fit`` with missing key values, policy "pattern" (:mod:`.missing`)."""
        if "block_size" not in self._param_names:
            raise ParameterError(f"missing='pattern' is available for MDAV, V-MDAV and PCL, not {type(self).__name__}")
        return fit_numeric(self, X, w, strata, bool(merge), progress)  # issue 39: strata in missing.fit_numeric

    def _stratified_partition(self, Z, X, strata, merge: bool, progress):
        """The partition within each stratum (:mod:`.strata`): (labels, "stratified", rule)."""
        from .strata import group_strata, strata_of

        if "block_size" not in self._param_names:
            raise ParameterError(f"strata are available for MDAV, V-MDAV and PCL, not {type(self).__name__}")
        self._check_params()
        names, values = strata_of(strata, Z.shape[0])
        which, groups, self.strata_merged_ = group_strata(values, self.k_, merge)
        self._record_strata = which  # for _identical_split: identical tuples of different strata are not split
        labels, fitted = self._partition_subsets(Z, X, which, [None] * len(groups), "stratum", progress)
        rules = [{"values": stratum, **fit} for stratum, fit in zip(groups, fitted)]
        self.strata_ = groups
        self.blocks_ = f"{len(groups)} strata" + ("" if self.n_blocks_ == len(groups) else
                                                 f", {self.n_blocks_} blocks of at most {self.block_size_:,} records")
        return labels, "stratified", {"columns": names, "strata": rules}

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
        self._check_params()
        if "block_size" not in self._param_names:
            return self._partition(Z, X, progress)
        n = Z.shape[0]
        B = check_block_size(self.block_size, self.k_, n, self._default_block_size)
        check_jobs(self.n_jobs)
        self.__dict__.pop("partition_", None)  # MDAV's unblocked partition: no stale one after a blocked fit
        if B == 0:
            self.block_size_, self.n_blocks_, self.block_sizes_ = 0, 1, np.array([n])
            self.blocks_ = blocks_note(1, 0, self.block_sizes_)
            return self._settled_partition(Z, X, progress)
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
        return self._wrap_output(self.function_.transform(X, strata), X, getattr(self, "feature_names_in_", None))

    def fit_transform(self, X, y=None, *, weights=None, strata=None, merge_small_strata=False, missing="raise",
                      nominal=(), ordinal=(), progress=None) -> np.ndarray:
        """Fit, then return every fitted record replaced by its group centroid (NaN where
        ``missing="pattern"`` releases a key missing). A DataFrame X gives a DataFrame with its
        index and the keys' names (:meth:`set_output`)."""
        self.fit(X, weights=weights, strata=strata, merge_small_strata=merge_small_strata, missing=missing,
                 nominal=nominal, ordinal=ordinal, progress=progress)
        if isinstance(self.centroids_, list):
            values = np.column_stack([c[self.labels_[:, j]] for j, c in enumerate(self.centroids_)])
        else:
            values = self.centroids_[self.labels_]
        return self._wrap_output(values, X, getattr(self, "feature_names_in_", None))
