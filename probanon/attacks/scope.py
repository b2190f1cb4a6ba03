"""What each guarantee of probanon covers, in words: which intruder, what it knows, what is bounded
and what is not. Used by the CLI help, the attack reports and the result objects, so that no
release claims an unqualified "re-identification probability <= 1/k"."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Guarantee:
    """The scope of one mechanism's guarantee."""

    mechanism: str
    claim: str
    intruder: str
    bounded: str
    not_bounded: str

    def text(self) -> str:
        return (f"Guarantee ({self.mechanism}): {self.claim}. Against: {self.intruder}. Bounded: {self.bounded}. "
                f"Not bounded: {self.not_bounded}.")

    def to_dict(self) -> dict:
        return {"mechanism": self.mechanism, "claim": self.claim, "intruder": self.intruder,
                "bounded": self.bounded, "not_bounded": self.not_bounded}


_CONFIDENTIAL_KEPT = ("linking through the confidential columns, which are released per record: a key that is "
                      "(nearly) a function of confidential columns, such as a total of released amounts, or a "
                      "model of confidential-given-keys learned from the release itself (run 'probanon attack' and "
                      "'probanon audit' to measure these)")

GUARANTEES = {
    "microaggregation": Guarantee(
        "microaggregation", "every released key tuple is shared by at least k records (k-anonymity on the keys)",
        "an intruder who knows a person's keys and links by the keys alone",
        "identity disclosure by key matching: such an intruder picks the person's row with probability <= 1/k",
        _CONFIDENTIAL_KEPT + "; attribute disclosure when a group's confidential values are alike; membership"),
    "survey": Guarantee(
        "survey", "with probability >= 1 - p over who responds, every cell holds at least k respondents "
        "(p-probabilistic k-anonymity, paper 1)",
        "an intruder who knows a respondent's keys, applies the published function and looks in their cell",
        "identity disclosure by the cell: probability <= 1/k of picking the respondent's answers, except with "
        "probability p",
        _CONFIDENTIAL_KEPT + "; membership (whether a person responded)"),
    "mdav-id": Guarantee(
        "mdav-id", "every attribute is replaced by its MDAV group mean: each released record is shared by at least "
        "k records (k-anonymity on all attributes)",
        "an intruder who knows any of a person's attributes and links by them",
        "identity disclosure: probability <= 1/k of picking the person's record",
        "attribute disclosure when a group's values are alike (the released mean is close to the person's value); "
        "membership"),
    "mdav-swap": Guarantee(
        "mdav-swap", "the key tuples are permuted at random inside MDAV groups of at least k records (paper 2, "
        "Sec. IV-A)",
        "the uninformed intruder: knows a person's keys only and links by them (the intruder of the proof)",
        "identity disclosure by key matching: the row holding a person's key tuple carries their confidential "
        "values with probability 1/|G| <= 1/k",
        "an intruder who learns from the release how the confidential values depend on the keys and assigns the "
        "members of a group (learned likelihood matching), or who knows a confidential value (informed: use "
        "mdav-swap-informed); a key determined by the confidential columns, which are released per record (e.g. a "
        "total of released amounts: 'probanon audit' finds it); membership"),
    "mdav-swap-informed": Guarantee(
        "mdav-swap-informed", "each confidential column is permuted at random inside MDAV groups (of at least k) "
        "of all the other attributes (paper 2, Sec. IV-B)",
        "an intruder who knows every other attribute of a person and attributes the value in their row",
        "attribution of each confidential value by position: the value in a person's row is theirs with probability "
        "<= 1/k",
        "identity disclosure (keys are released unchanged: the person's row is found); a value predicted from the "
        "other attributes by a model learned on the release; relations between keys and the confidential column; "
        "membership"),
    "ir-swap": Guarantee(
        "ir-swap", "each confidential column is permuted at random inside blocks of k consecutive ranks (paper 2, "
        "Sec. IV-C)",
        "an intruder who knows every other attribute of a person and attributes the value in their row",
        "attribution of each confidential value by position: the value in a person's row is theirs with "
        "probability <= 1/k",
        "identity disclosure (keys are released unchanged); the value's range (every value of a block is within "
        "the block's range: attribute disclosure up to that range); a value predicted by a learned model; membership"),
    "km": Guarantee(
        "km", "for every l <= m, an l-itemset drawn uniformly from the distinct l-itemsets occurring in the original "
        "records is contained, after the published global recoding (a partition of the items or a hierarchy cut), in "
        "at least k released records with probability >= sigma (sigma-k^m-anonymity, paper 5, Definition 1 with "
        "B_l uniform)",
        "an intruder who knows at most m items of a person, an itemset drawn uniformly from the distinct itemsets "
        "of the data, knows the recoding and picks uniformly one released record containing the recoded itemset",
        "identity disclosure by such an itemset: probability <= sigma/k + (1 - sigma) = 1 - sigma (1 - 1/k) of "
        "picking the person's record (<= 1/k on the sigma share of itemsets with >= k holders, <= 1 on the rest; "
        "k_m and sigma_m when they vary with the level)",
        "more than m known items; itemsets drawn otherwise than uniformly over the distinct ones, e.g. m items of "
        "a uniformly chosen person (which weighs itemsets by their holders) or a person's most telling items; the "
        "rest of the person's record once it is found (every item of it is released, recoded); sigma itself "
        "holds only with the confidence of Algorithm 2's sampling unless checked exactly ('probanon km check'); "
        "membership"),
    "l-delta": Guarantee(
        "l-delta", "a count table released under the plan (N records drawn i.i.d. from the planned distribution, "
        "counted per class and sensitive value) is l-diverse -- every non-empty class holds >= l distinct "
        "sensitive values -- with probability >= 1 - delta (Definition 4.1, Theorem 4.4); t such tables linked "
        "by the per-class minimum of their counts are, with probability >= 1 - t delta (Theorem 4.5)",
        "an intruder who knows a person's quasi-identifier (hence the person's class in the public plan), that "
        "the person contributes to each of the t releases (Assumption 1) and the t count tables, and keeps the "
        "sensitive values present in the person's class of every table (Sec. 2.3)",
        "the probability, over the sampling of the records, that linking t releases leaves some class with fewer "
        "than l possible sensitive values: <= t delta (<= delta for one release)",
        "releases that are not N i.i.d. draws from the planned distribution (fewer records, records not "
        "independent, a true distribution farther from the plan's than its margin); how skewed "
        "the l values are (one value held by most of a class: entropy or recursive diversity and t-closeness are "
        "not bounded); an intruder who knows other people's values and removes them; more than t linked "
        "releases (the bound grows as t delta); membership"),
    "unknown": Guarantee(
        "unknown", "none stated (the mechanism is not known to probanon)", "the intruders of the attack suite",
        "nothing", "everything: the attack suite measures the risk but cannot compare it with a bound"),
}


def guarantee(mechanism: str) -> Guarantee:
    return GUARANTEES[mechanism]
