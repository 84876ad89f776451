"""The PySide6 GUI: windows and widgets; worker I/O runs async on the qasync loop."""
