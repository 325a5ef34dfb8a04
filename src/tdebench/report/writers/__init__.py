"""The writers: report.md and compare.md (markdown.py), report.html and compare.html (html.py and
its templates), the CSV files (csvfiles.py). They draw any document's sections without knowing
where they came from, and nothing below them imports them."""
