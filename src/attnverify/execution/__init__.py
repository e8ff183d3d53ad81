"""Where experiments execute and where their results are kept.

store      the run-scoped [`Store`][attnverify.execution.Store]: an experiment (a pure function from parameters to a
frozen result) runs
           once per run, and claims and sections read it back (e.g. the networks of figure 2c and of the
           sampled-network claims)
tasks      a run's work as data: experiments, claims and sections with what each waits for
scheduler  runs the tasks serially or on worker processes; cluster  the same on Dask
"""

from .store import Store

__all__ = ["Store"]
