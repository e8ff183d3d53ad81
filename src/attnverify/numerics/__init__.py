"""Array code on numpy (default) or cupy: backends, data generators, simulators, statistics."""
