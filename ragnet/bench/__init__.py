"""Timings a user runs on their own install: commands that print figures, kept out of the library packages.

Only :mod:`ragnet.cli` imports this package (``ragnet bench ...``); no library package imports
it. The studies and the research benchmarks (the retrieval-laziness experiment, the one-off
studies behind ``docs/results``) live outside the package, in a clone's ``benchmarks/`` folder
(``python -m benchmarks.<name>``), and are not installed with it.

* :mod:`ragnet.bench.core`: timings and optimality gaps of the numpy core (``ragnet bench core``);
* :mod:`ragnet.bench.index_timings`: search latency, indexing overhead, embedding backends and Ray
  builds (``ragnet bench core|index|embed|ray``);
* :mod:`ragnet.bench.scale`: an index of up to a million passages, real plus distractors
  (``ragnet bench scale``);
* :mod:`ragnet.bench.update`: updating an index after one changed PDF (``ragnet bench update``);
* :mod:`ragnet.bench.serve_load`: concurrent clients against ``ragnet serve`` (``ragnet bench serve``);
* :mod:`ragnet.bench.questions`: the dev questions every benchmark picks.
"""
