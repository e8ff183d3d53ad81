"""A run: the claims of the chosen theories checked as tasks (`.claims`), and the report built from their
sections and results (`.report`), serially, on local worker processes or on a Dask cluster. This is the
layer the command line and the pytest plugin hand off to; it stands on every layer below it."""
