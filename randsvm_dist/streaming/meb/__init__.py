"""The ball-cover learners: ``streamsvm`` (StreamSVM, one minimum enclosing ball) and
``blurred_ball`` (BlurredBallSVM, a cover of several), over the shared numba ball-cover
kernels of the private modules (``_cover`` is their entry).
"""
