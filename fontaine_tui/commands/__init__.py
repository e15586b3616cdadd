"""The sub-commands, one module each: its parser, what it runs and its exit codes."""
