"""The API server's semantics: typed verbs, retries and the deadline, kubectl's connection rules."""
