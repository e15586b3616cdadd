"""The run registry and the fleet: every run this user launched or attached, checked live."""
