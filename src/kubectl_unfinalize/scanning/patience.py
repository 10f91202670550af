"""How long scan waits before it judges: a deletion's grace, a controller's working time,
and how long a sign of life or a built-in controller is given. Apart from evidence.py so
that the command line's help text (built for every run) names them without importing the
scan's classes, whose creation was a tenth of a freeing run's start-up."""

GRACE = 30.0
WORKING = 120.0
ALIVE_PATIENCE = 900.0
BUILTIN_PATIENCE = 600.0
