"""Reports of an evaluation, written from its rows without running anything.

* :mod:`~ragnet.eval.report.summary`: ``summary.json``, every aggregate of a run;
* :mod:`~ragnet.eval.report.markdown_report`: ``report.md``, the summary as markdown, with the
  cells and tables of :mod:`~ragnet.eval.report.markdown_tables` (shared by every report);
* :mod:`~ragnet.eval.report.html_report`: ``report.html`` (template ``html_report.j2``, the
  summary's Markdown rendered by :mod:`~ragnet.eval.report.markdown_html`, what it reads and
  writes checked by :mod:`~ragnet.eval.report.page_checks`);
* :mod:`~ragnet.eval.report.plots`: the PNG plots.
"""
