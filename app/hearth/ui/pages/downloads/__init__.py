"""Downloads: one card per download, with its state's buttons.
"""
