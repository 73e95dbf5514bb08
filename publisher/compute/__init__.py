"""Pure computations on snapshot values: no I/O."""
