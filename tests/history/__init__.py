"""Answers that must not depend on a process's history."""
