"""The bank wing: finished runs kept as comparators.

A preset compares a run with a banked run's whole curves, not only with numbers typed in.
"""
