"""Reproductions of the papers' tables and figures, our values printed beside the paper's.

One module per paper (``probanon reproduce <paper>``):

=========  =====================================================================
swapping   probabilistic k-anonymity by microaggregation and swapping (paper 2):
           :func:`probanon.reproduce.swapping.reproduce_swapping`
surveys    p-probabilistic k-anonymous microaggregation for surveys (paper 1):
           :func:`probanon.reproduce.surveys.reproduce_surveys`
pcl        k-anonymous Lloyd (PCL) against MDAV (paper 3):
           :func:`probanon.reproduce.pcl.reproduce_pcl`
diversity  (l, delta)-diversity: N values, Figs. 1-2, the linkage attack (paper 4):
           :func:`probanon.reproduce.diversity.reproduce_diversity`
km         probabilistic k^m-anonymity: gamma, Example 1, a synthetic CDR grid
           (paper 5): :func:`probanon.reproduce.km.reproduce_km`
=========  =====================================================================

The modules are imported lazily (they pull in matplotlib).
"""

from __future__ import annotations

__all__ = ["reproduce_diversity", "reproduce_km", "reproduce_pcl", "reproduce_surveys", "reproduce_swapping"]


def __getattr__(name):
    from .._validation import checked_call

    return checked_call(_attribute(name))


def _attribute(name):
    if name == "reproduce_surveys":
        from .surveys import reproduce_surveys

        return reproduce_surveys
    if name == "reproduce_pcl":
        from .pcl import reproduce_pcl

        return reproduce_pcl
    if name == "reproduce_swapping":
        from .swapping import reproduce_swapping

        return reproduce_swapping
    if name == "reproduce_diversity":
        from .diversity import reproduce_diversity

        return reproduce_diversity
    if name == "reproduce_km":
        from .km import reproduce_km

        return reproduce_km
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
