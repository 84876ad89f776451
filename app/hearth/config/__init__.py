"""Where Hearth keeps things, and the user's settings."""
