"""The SSH wing: the connection to another host that following and launching share.

destination.py (an ssh destination checked, SshTarget: a folder on a host), connection.py
(SshConnection: the shared OpenSSH master, remote commands, a file read whole; SshError),
control.py (the short private folder of a shared connection's socket, the fleet's too). It
knows no log format, no follower and no launch.
"""
