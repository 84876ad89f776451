"""The look of the app in one place: colour tokens, scales, the stylesheet, icons."""
