"""The app's pages besides the chat: Discover, Downloads, Library (and their helpers)."""
