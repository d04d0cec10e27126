"""Does the gold evidence reach the context? Studies that measure it with no answer call.

* :mod:`~ragnet.eval.recall.retrieval_recall`: gold-document recall of context selection rules
  at token budgets (``ragnet eval retrieval``), with no LM;
* :mod:`~ragnet.eval.recall.sentence_recall`: whether every gold supporting sentence fits a
  small context, per selection (part of ``ragnet eval retrieval``), with no LM;
* :mod:`~ragnet.eval.recall.hop_recall`: whether a follow-up search finds the gold document the
  first search missed (``ragnet eval hops``; the bridge search needs no LM, the rewrite policies
  call the rewrite step only).
"""
