"""One config version compiled: the route table a request reads (per route: picker, health,
active checker, semantic and shadow routers, legs by client protocol), built by
`compile.compile_table` from the frozen specs of `config/`."""
