"""What tdebench knows of a PostgreSQL server, written once for the server tdebench starts
(engines/postgres.py) and the server by url (engines/remote_postgres.py); the column layer both
offer is engines/pgcrypto.py's.
"""

from __future__ import annotations

SCHEMES = ("postgres", "postgresql")
DEFAULT_PORT = 5432
"""PostgreSQL's port: a server by url's unless its URL says otherwise, and what the server
tdebench starts (which opens no TCP port) names its socket file after (`.s.PGSQL.5432`)."""
