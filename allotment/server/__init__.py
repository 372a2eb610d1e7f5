"""Serving the application: the composition root and the HTTP server underneath it."""
