"""The SSH wing: the connection to another host that following and launching share.

It knows no log format, no follower and no launch.
"""
