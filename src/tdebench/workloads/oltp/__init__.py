"""The oltp workload: TPC-C's schema, data and five transactions in the mix of Madyatmadja
et al. (2021) (docs/references.md), run by virtual users in a load test and a stress test,
with TPM, NOPM, latency percentiles and the spec's consistency checks."""

from tdebench.workloads.oltp.workload import OltpWorkload

__all__ = ["OltpWorkload"]
