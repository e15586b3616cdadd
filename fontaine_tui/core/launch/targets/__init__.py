"""Launch targets: where a run is launched, one module each.

No target imports another (a contract holds it); what they share is base.py's.
"""
