"""The REST API's shared plumbing: the one exception handler, pagination, token login, the URL list."""
