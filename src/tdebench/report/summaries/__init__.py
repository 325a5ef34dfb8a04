"""The report's summaries: what the data says, as tables (tables.py), plots (plots.py) and
sentences (findings.py, claims.py, noise.py), and the analyses behind them (cache fit, cipher
cost, connection, resources). They import the data layer and each other, never a section or a
writer."""
