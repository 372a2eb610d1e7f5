"""The differential lane: allotment and upstream Placement 16.0.0 answer the
same randomly generated requests, and their answers are compared."""
