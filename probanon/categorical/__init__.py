"""Categorical keys the way statistical offices protect them (issue 43): global recoding, local
suppression to k-anonymity over key combinations (a fast method and an exact integer program),
recoding-plus-suppression strategies, and invariant PRAM."""

from .exact import exact_suppression
from .pram import PRAM, TransitionMatrix, corrected_frequencies, invariant_matrix, invariant_of
from .pram_measure import PramMeasure, pram_measure
from .recoding import BottomCode, Group, Hierarchy, Intervals, RecodeReport, Round, TopCode, recode, steps_from_json
from .strategies import KAnonResult, compare_strategies, information_loss, kanon
from .suppression import SuppressionResult, local_suppression

__all__ = ["BottomCode", "Group", "Hierarchy", "Intervals", "KAnonResult", "PRAM", "PramMeasure", "RecodeReport",
           "Round", "SuppressionResult", "TopCode", "TransitionMatrix", "compare_strategies", "corrected_frequencies",
           "exact_suppression", "information_loss", "invariant_matrix", "invariant_of", "kanon", "local_suppression",
           "pram_measure", "recode", "steps_from_json"]
