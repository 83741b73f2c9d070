"""What the chapters compute between the library's results and the page: the tables, the glued
numbers and the sentences of each chapter, so that a chapter holds prose, parameters and short
calls, not code. Presentation and summaries only: nothing here changes what a run computes.

How every table and number looks (all chapters):

- ``tables``: display names, reader-facing column names, ``show``/``captioned``, run notes.
- ``table_text``: how one number is written (minus sign, intervals, p-values, digits).

By chapter:

- ``fedavg_from_scratch``, ``foundations`` (00): FedAvg in a dozen lines; Local against FedAvg.
- ``one_run`` (01): the chosen splits and who gains in one run.
- ``divergence`` (02): layer-wise divergence, claim C1.
- ``sensitivity_study`` (03): the measurements, claim C2 and the metric's cost.
- ``sensitivity_splits`` (03): the split the metric gives, its stability and thresholds.
- ``averaging`` (03a): how well the first-order term predicts the loss change of averaging.
- ``split_choice`` (04): the split sweep against the rule, heterogeneity, C5 at one rate.
- ``rule_variants`` (04): the rule's pooling variants against the paper's.
- ``rule_study`` (04b): the rules table, the pre-registered analysis and claim R2.
- ``rule_follow_ups`` (04b, appendix): the follow-up and confirmation tests in sentences.
- ``rule_family`` (04b): the chapter's answer, glued numbers and tables of the rule family.
- ``rule_scope`` (04b, 06): what R2's verdict rests on (sets, distinct rules, deciding kinds).
- ``every_protocol`` (appendix; 04, 04b, 06): the answer under every protocol, one long table,
  and the one headline value per quantity the chapters print.
- ``protocol_sentences`` (04, 04b, appendix): the sentences pages glue from that table.
- ``comparison``, ``claim_answers`` (05): PLayer-FL against the baselines, claims C3–C5.
- ``reproduction`` (06): our grid beside the published tables, the claims scorecard.
- ``authors_choices`` (06): the authors' evaluation and training choices, measured.
- ``authors_mode`` (06): the published accuracies beside the authors' mode and the book's.
- ``bottom_line`` (06, intro): the scorecard's few sentences a reader can repeat.
- ``silos`` (07): the same runs in-process and on Flower.
"""
