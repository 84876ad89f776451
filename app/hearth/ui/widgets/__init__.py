"""Widgets shared by several parts: section cards, chips, cards, switches, empty states,
the list pages' look.
"""
