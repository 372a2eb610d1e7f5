"""Running real services for tests and benchmarks: allotment, upstream Placement
16.0.0 (test-only, in a venv of its own) and scratch PostgreSQL databases."""
