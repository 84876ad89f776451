"""Server: the endpoint, API keys, client configs and the request log.
"""
