"""Plain typed values shared by every layer: no I/O, no Qt, no llama_cpp."""
