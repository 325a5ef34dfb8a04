"""One plan on many machines through Dask distributed (`tdebench run PLAN --cluster ADDRESS`).

The unit of work is a whole round of one comparison group (work.py): every encryption of an
engine, memory, workload and scale in one round, with its baseline and placebo, run by one
worker as a local run would run them, so every overhead is computed within one host. Each
worker declares one "machine" resource, so it runs one unit at a time.

- work.py: the units, the trials in flight, a host's identity (pure, no Dask).
- unit.py: `python -m tdebench.cluster.unit`, one unit in a process of its own on the worker:
  the runner with a store that streams each finished trial's records to its parent.
- worker.py: the Dask task that starts that process, forwards its records to the client as
  events, counts the trials lost with a dead worker and stops the process when the client asks.
- client.py: the client: the workers checked, units submitted, records appended to the one
  results.jsonl with each host's identity, environment.json with every host, Ctrl-C.

`distributed` is the optional extra `tdebench[cluster]`; only this package imports it.
"""
