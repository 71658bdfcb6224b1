"""Model files, every format in one place.

- ``libsvm_text``: LIBSVM's model text (parse, format) for kernel SV models (layer 1);
- ``libsvm_sv_lines``: the SV lines of that text, our marker on them, the SV matrix (layer 1);
- ``ovo_layout``: one-vs-one solutions in LIBSVM's model layout (layer 1);
- ``estimator_files``: a fitted estimator to and from its file's parts (layer 5);
- ``load``: save and load any model kind, dispatching by format (layer 6).
"""
