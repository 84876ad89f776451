"""The chat: the session that streams a reply, the transcript and its cards, the composer,
the chat list and per-chat settings.
"""
