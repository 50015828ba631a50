"""`memoryd eval`: a labelled scenario set run through the configured model into a throw-away
store, and the store scored against the labels (docs/eval.md).

`labels` reads a set, `run` files it into temporary folders with the real heartbeat and rewrite,
`store_view` reads what was filed, `score` compares it with the labels, `retrieval` asks the
labelled questions of memoryd's search.
"""
