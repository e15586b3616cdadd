"""The console's screens: one per mode, and the dialogs."""
