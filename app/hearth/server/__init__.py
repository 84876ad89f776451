"""The worker's HTTP layer: OpenAI/Ollama JSON in and out, engine types inside."""
