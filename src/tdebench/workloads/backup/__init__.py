"""The backup workload: full, compressed and logical backups of a loaded TPC-H database, each
restored into a fresh instance and checked, its artifact scanned for plaintext, and its
restore without the key attempted."""

from tdebench.workloads.backup.workload import BackupWorkload

__all__ = ["BackupWorkload"]
