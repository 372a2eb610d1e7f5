"""Taking over a database upstream Placement 16.0.0 created and filled, and
handing it back."""
