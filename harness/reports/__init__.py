"""The run's results, one model and its views: the terminal summary, the JSON report and
JUnit properties (`reporting`), and the HTML page (`html`).

May import every room below it (`contract`, `verdicts`, `sandbox`, `cases`, `run`).
"""
