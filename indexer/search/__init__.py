"""A question → the section that answers: fusion, ranking rules, reading what a result points at, the query log, evaluation."""
