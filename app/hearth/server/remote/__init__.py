"""Remote engines behind Hearth's endpoint: vLLM, llama-server, LM Studio, SGLang,
Ollama or another Hearth, reached over HTTP.

A request naming ``engine-name/model-id`` is decoded by its dialect as usual; the
pipeline hands it to the engine's :class:`~hearth.server.remote.backend.RemoteBackend`
instead of the local llama.cpp engine, which streams from the remote server and yields
the same plain events, so every dialect Hearth serves works with every engine. The
remote's key (``hearth.config.engines``) is sent only to that engine, never logged.
"""
