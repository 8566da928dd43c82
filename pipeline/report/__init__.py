"""The run report: report.html and its curves."""
