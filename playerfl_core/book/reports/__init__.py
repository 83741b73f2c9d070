"""What the chapters compute between the library's results and the page: the tables, the glued
numbers and the sentences of each chapter, so that a chapter holds prose, parameters and short
calls, not code. Presentation and summaries only: nothing here changes what a run computes."""
