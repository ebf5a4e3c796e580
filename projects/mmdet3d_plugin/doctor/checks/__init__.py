"""The doctor's checks, one module per area."""
