"""The inference engine: the only package that imports llama_cpp (worker process only)."""
