"""Spelt's dataset transformations, one module per operation as Grain lays them out
(grain/_src/python/dataset/transformations/). Each imports only the bases (spelt/_base.py)
and the engine (``spelt._core``); ``spelt.dataset`` wires them into the bases' methods, and
``spelt.experimental`` exports the public ones. A module that composes others (thread
prefetch over interleave) says so at its top."""
