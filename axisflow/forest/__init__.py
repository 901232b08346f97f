"""The forest model and what is computed on it, free of xDSL.

* ``frames``: modes, mode maps, canonical frames (every relabelling).
* ``model``: ``Forest`` (spaces, values, trees, use-sites, loops).
* ``roles``: the loop role of every value for every loop, on the model.
* ``builder``: ``ForestBuilder`` to write a forest by hand (tests, tools).
"""
