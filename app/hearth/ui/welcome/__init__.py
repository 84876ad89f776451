"""The first run: the Welcome window and the quick start from an empty Chat page.
"""
