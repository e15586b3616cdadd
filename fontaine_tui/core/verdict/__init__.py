"""The verdict wing: the pure rules that read a run against its preset's frozen bounds.

`rules.py` (the verdict), `record.py` (the Verdict record and verdict.json), `bounds.py` (a
read number against its bounds), `amendments.py` (which amendments count), `readpoint.py`
(where the rule reads), `curves.py` (the banked comparators' curves), `lock.py` (the
decision lock), `prereg.py` (the frozen pre-registration), `ledger.py` (amendments.jsonl),
`review.py` (the review chain), `export.py` (verdict.json and the chart), `text.py` (a
verdict as text), `chart.py` (what to draw; the specs built in `losschart.py`,
`probechart.py`, `envelope.py`). The preset itself is the preset wing's."""
