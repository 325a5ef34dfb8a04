"""The strength workload: repeated ciphertext, tamper detection and old keys after a rekey, on
the files of a closed database."""

from tdebench.workloads.strength.workload import StrengthWorkload

__all__ = ["StrengthWorkload"]
