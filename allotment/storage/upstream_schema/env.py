"""Alembic environment of upstream Placement's tables: allotment's own, run afresh."""

import os
import runpy

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            os.pardir, "migrations", "env.py"))
