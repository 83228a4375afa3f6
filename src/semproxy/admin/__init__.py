"""The control plane: the admin API, the routing playground, examples editing, config reload,
and the worker that runs the data plane's listener beside them."""
