"""The notify wing: run events sent to chat and push services, in the background.

Whatever may be shown or sent is masked first by core/secrets.py, the one secrets policy.
"""
