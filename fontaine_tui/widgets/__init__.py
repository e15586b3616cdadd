"""The console's widgets: each renders what a screen gives it, and imports no screen."""
