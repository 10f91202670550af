"""HTTP/1.1 on sockets, as the API server speaks it. Imports nothing else of the package."""
