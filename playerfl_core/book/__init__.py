"""What serves the book's chapters: reports, figures, style, prose and the chapters' stamps.

Here: ``reports/`` (one module per chapter: the numbers and tables it shows), the figures
(``plots``, ``analysis_plots``, ``comparison_plots``, ``split_plots``, ``averaging_plots``,
``data_plots``), ``style`` (colours and the figure style; it re-exports ``display_names``, what
the page calls a thing), ``prose`` (numbers in sentences) and
``notebook_stamp`` (``make book`` re-executes a chapter only when its inputs changed) and
``source_archive`` (the source of the commit the HTML is built from, linked from the book).
Presentation only: nothing here changes what a run computes.

May import: every wing below it (``flower``, ``study``, ``measure``, ``stats``, ``fl``) and
``data_prep``. Imported by the chapters only; the entry points above it do not need it.
"""
