"""The window's shell: the main window, the top bar and model picker, the page rail, the
status line, crash recovery.
"""
