"""Experiments: pure functions from parameters to frozen results, memoised in a run-scoped :class:`Store`.

Claims compare results and report sections draw them; both ask the run's store, so one experiment
(e.g. the networks sampled for figure 2c and for the sampled-network claims) runs once per run.
"""

from .store import Store

__all__ = ["Store"]
