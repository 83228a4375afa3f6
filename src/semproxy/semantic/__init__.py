"""Semantic routing: from a chat request to the instance whose examples it resembles.

One package, used the same way by the gateway, the CLI (`explain`, `eval`,
`calibrate`) and `quality/`:

- `query`: what text a request is routed on
- `similarity`: pure vector math (normalise, per-instance aggregate, rank)
- `scorer`: reference vectors of a route and the scores of embedded prompts
- `decision`: thresholds, catchall, margin and negatives -> a `Decision`
- `router`: `SemanticRouter` (`route`, `route_many`) and `open_router`, its one constructor
- `explain`: a decision spelled out for people

Nothing here imports `server/`; this file imports nothing, so importing the
package loads no model.
"""
