"""The violator scan and its screening: ``partition`` scans one partition's rows (run on
the workers), ``dispatch`` spreads the scan tasks over the workers and sums their answers,
``values`` evaluates the decision values, ``screening`` and ``row_screening`` decide which
rows a scan may skip, ``screening_store`` keeps the bounds on the workers.
"""
