"""(l, delta)-diversity (paper 4, l-delta-diversity.txt): plan equivalence classes and sample
sizes from a joint distribution, release counts, check released tables, attack linked releases.

Planning and release are imported here; the public names of :mod:`.checks` (k-anonymity,
l-diversity, t-closeness), :mod:`.attack` (linkage attack, worst case, Monte Carlo) and
:mod:`.microaggregation` (t-close and l-diverse microaggregation, issue 42.2) are forwarded
on first use, so ``from probanon.diversity import diversity_report`` works without importing
those modules with the package.
"""

import importlib
import inspect

from .distribution import (
    JointDistribution,
    distribution_from_array,
    distribution_from_frame,
    estimate_distribution,
    read_distribution,
)
from .planning import (
    DiversityPlan,
    Generalization,
    class_bound,
    class_masses,
    delta_after_linkage,
    generalize_independent,
    greedy_generalize,
    pareto_front,
    plan_diversity,
    sample_size,
)
from .release import assign_classes, load_plan, release_counts, save_plan

_FORWARDED = ("checks", "attack", "microaggregation")

__all__ = [
    "DiversityPlan",
    "Generalization",
    "JointDistribution",
    "assign_classes",
    "class_bound",
    "class_masses",
    "delta_after_linkage",
    "distribution_from_array",
    "distribution_from_frame",
    "estimate_distribution",
    "generalize_independent",
    "greedy_generalize",
    "load_plan",
    "pareto_front",
    "plan_diversity",
    "read_distribution",
    "release_counts",
    "sample_size",
    "save_plan",
]

from .._validation import checked_call, guard_public  # noqa: E402

guard_public(globals(), __all__)  # calls that do not fit a signature: our error



def _module(name: str):
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{name}":
            return None
        raise


def _public(module) -> list:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items()
                 if not n.startswith("_") and getattr(v, "__module__", None) == module.__name__]
    return list(names)


def __getattr__(name: str):
    if not name.startswith("_"):
        for mod_name in _FORWARDED:
            module = _module(mod_name)
            if module is not None and name in _public(module):
                value = getattr(module, name)
                value = checked_call(value) if inspect.isfunction(value) and not getattr(value, "checked_call", False) else value
                globals()[name] = value
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    names = set(globals()) | set(__all__)
    for mod_name in _FORWARDED:
        module = _module(mod_name)
        if module is not None:
            names.update(_public(module))
    return sorted(names)
