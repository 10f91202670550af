"""The command line: parse, print, complete. Imports no kubernetes client at load time."""
