"""Library: the models on disk, found models from other apps, quantize.
"""
