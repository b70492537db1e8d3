"""Serve a team's own retriever and generation step to rageval in two lines.

    from rageval_bridge import serve
    serve(retriever=vector_store, generate=chain, port=8000)

``/retrieve`` answers rageval's ``retriever: {kind: http}`` and ``/generate`` its
``chat: {kind: http}`` (docs/python.md in the rageval repository). ``python -m rageval_bridge
module:object`` does the same from the command line.
"""

from .adapters import ContractError, Keys, documents, generator, nodes, retriever
from .server import Bridge, make_server, serve, start, url_of

__version__ = "0.1.0"

__all__ = [
    "Bridge",
    "ContractError",
    "Keys",
    "documents",
    "generator",
    "make_server",
    "nodes",
    "retriever",
    "serve",
    "start",
    "url_of",
]
