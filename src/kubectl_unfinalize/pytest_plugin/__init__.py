"""The pytest plugin: a front end beside the command line, on the public Python API alone.

plugin.py holds the hooks (the pytest11 entry point `unfinalize` names it, as pytest-xdist's
and pytest-django's name their plugin.py), settings.py the options, plan.py what to free
from a scan, teardown.py the work on the cluster and its thread, summary.py the section.
"""
