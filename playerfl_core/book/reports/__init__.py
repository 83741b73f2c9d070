"""What the chapters compute between the library's results and the page: their tables, glued
numbers and sentences, so that a chapter holds prose, parameters and short calls. Presentation
only: nothing here changes what a run computes.

- ``tables`` (display names, column names, ``show``/``captioned``, run notes) and ``table_text``
  (how one number is written): how every table and number looks.
- 00: ``fedavg_from_scratch`` (FedAvg in a dozen lines), ``foundations`` (Local against FedAvg).
- 01: ``one_run``; 02: ``divergence`` (claim C1); 03a: ``averaging`` (the first-order term).
- 03: ``sensitivity_study`` (measurements, C2, cost), ``sensitivity_splits`` (the metric's split).
- 04: ``split_choice`` (sweep against rule, heterogeneity, C5), ``rule_variants`` (poolings).
- 04b: ``rule_study`` (the pre-registered analysis, R2), ``rule_family`` (answer, numbers,
  tables), ``rule_follow_ups`` (later tests in sentences), ``rule_scope`` (what R2 rests on).
- appendix, 04, 04b, 06: ``every_protocol`` (the answer under every protocol, one headline per
  quantity) and ``protocol_sentences`` (the sentences glued from it).
- 05: ``comparison``, ``claim_answers`` (PLayer-FL against the baselines, C3–C5).
- 06: ``reproduction`` (beside the published tables, the scorecard), ``authors_choices`` and
  ``authors_mode`` (the authors' choices, measured), ``bottom_line`` (also the intro's).
- 07: ``silos`` (the same runs in-process and on Flower).
"""
