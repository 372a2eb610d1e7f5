"""The HTTP API: routes, microversions, parsing, rendering."""
