"""Categorical keys the way statistical offices protect them (issue 43): global recoding, local
suppression to k-anonymity over key combinations (a fast method and an exact integer program),
recoding-plus-suppression strategies, and invariant PRAM."""
