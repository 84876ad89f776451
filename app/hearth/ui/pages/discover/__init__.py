"""Discover: search Hugging Face, a repo's page with its quantizations and their fit.
"""
