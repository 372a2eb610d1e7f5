"""Use cases: one function per operation, one transaction each."""
