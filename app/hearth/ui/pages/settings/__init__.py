"""Settings: models folders, downloads, the Hugging Face account, remote engines,
appearance.
"""
