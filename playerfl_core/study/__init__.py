"""Studies: many runs, stored, planned, tuned, archived and swept.

- ``run_spec``: what names a run (``RunSpec``) and the code that computes it (its fingerprint)
- ``run_store``: the run store: one directory of finished runs, each named by its spec
- ``machine``: which machine computed a number: the facts that decide a run's last bits
- ``verification``: does a recomputed run agree with its stored copy?
- ``code_versions``: which earlier versions of the code give today's runs bit for bit
- ``archive``: committed results: a compact, self-checking copy of a store
- ``archive_manifest``: the archive's format: its files, checksums, seal and provenance
- ``grid``: run a grid, or load it: plan, run what is missing, collect
- ``grid_plan``: which runs a grid needs
- ``grid_runner``: a plan's runs on a backend, longest first, with the time left
- ``grid_cost``: what a grid's runs cost, before and while it runs
- ``grid_result``: what a grid gives back: its table, each run's status, the chosen rates
- ``backends``: where runs compute: this machine's workers or a Ray cluster
- ``workers``: worker processes that end with their parent
- ``ray_cluster``: the Ray backend: runs as Ray tasks on a cluster
- ``tuning``: which learning rates a grid tries, and which one it keeps
- ``experiments``: the public names of grids and stores in one place
- ``split_sweeps``: every split p = 0 … L on the same seeds, run or loaded
- ``split_scores``: scores per split, the validation oracle, the rule's split and its regret
- ``split_rules_table``: every split rule on a sweep's first epochs, the probe, their regrets
- ``split_oracle``: does the rule pick the right split? The chapters' one import
- ``declaration``: a study, declared as data (``Study``)
- ``registry``: every study of the book, one declaration each
- ``runner``: one runner for every study: computes, keeps, collects and commits
- ``preregistration``: the pre-registered test of the split rules: its entries, tuning and analysis
- ``split_rule_runs``: that test's studies: their sweeps through the grid, then the rules table
- ``fair_sweeps``: every split at its own tuned learning rate
- ``rungs``: the scale ladder's rungs: the full split sweep at declared sizes and evaluation sets
- ``paper_scale``: the paper's sizes, computed in chunks with the batched driver
- ``rescore``: R1's and R2's regrets rescored on larger test and validation sets
- ``authors_mode``: every algorithm under the authors' protocol and under the book's

May import: ``measure``, ``stats``, ``fl`` and ``data_prep``. Imported by ``flower``, ``book``
and the entry points.
"""
