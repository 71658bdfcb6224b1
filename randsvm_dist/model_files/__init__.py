"""Model files, every format in one place.

- ``libsvm_text``: LIBSVM's model text (parse, format) for kernel SV models (layer 1);
- ``libsvm_sv_lines``: the SV lines of that text, our marker on them, the SV matrix (layer 1);
- ``ovo_layout``: one-vs-one solutions in LIBSVM's model layout (layer 1);
- ``streaming_files``: streaming learners as .npz files without pickle (layer 2);
- ``estimator_files``: a fitted estimator to and from its file's parts (layer 5).

Saving and loading any model kind, told by its format, is ``app.model_io`` (layer 6).
"""
