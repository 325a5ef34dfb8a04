"""The report's data layer: the run's records as cells and summary records (records.py), what the
workloads declare for the report (declared.py), the run's recorded engines and encryptions
(encryptions.py), how every figure is printed (units.py) and the advice kept as data
(advice.py). It imports nothing else of report/."""
