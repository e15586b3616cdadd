"""The verdict wing: the pure rules that read a run against its preset's frozen bounds.

It also holds what a read is kept in and drawn from: the frozen pre-registration, the ledger
and review chains, verdict.json, the chart specs and the sealed bundle. The preset itself is
the preset wing's.
"""
