"""The preset wing: a pre-registration as strictly validated TOML.

A preset is held to its rules, given a canonical form, and hashed.
"""
