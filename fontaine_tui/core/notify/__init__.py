"""The notify wing: run events sent to chat and push services, in the background.

`destinations.py`: config.toml's `[[notify]]` tables and FONTAINE_NOTIFY, the service
  recognized from the URL.
`payloads.py`: a `Message` and each service's body.
(core/secrets.py, the one secrets policy, replaces webhook tokens and every other credential
  by *** in whatever may be shown or sent.)
`delivery.py`: the `Notifier`, a daemon thread and a bounded queue per destination, retries
  with back-off, failures as warnings."""
