"""Benchmarks and studies: commands that print figures, kept out of the library packages.

Only :mod:`ragnet.cli` imports this package (``ragnet bench ...`` and ``ragnet eval laziness``);
no library package imports it, so the library never carries the research code.

* :mod:`ragnet.bench.core`: timings and optimality gaps of the numpy core (``ragnet bench core``);
* :mod:`ragnet.bench.index`: search latency, indexing overhead, embedding backends and Ray
  builds (``ragnet bench core|index|embed|ray``);
* :mod:`ragnet.bench.scale`: an index of up to a million passages, real plus distractors
  (``ragnet bench scale``);
* :mod:`ragnet.bench.laziness_evaluator`, :mod:`ragnet.bench.laziness` and
  :mod:`ragnet.bench.sufficiency_step`: the retrieval-laziness study (``ragnet eval laziness``);
* :mod:`ragnet.bench.questions`: the dev questions every benchmark picks;
* :mod:`ragnet.bench.studies`: one-off study scripts behind sections of ``docs/results``, each
  runnable as ``python -m ragnet.bench.studies.<name> --help``.
"""
