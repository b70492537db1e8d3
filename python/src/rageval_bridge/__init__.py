"""Serve a team's own retriever and generation step to rageval in two lines.

    from rageval_bridge import serve
    serve(retriever=vector_store, generate=chain, port=8000)

``/retrieve`` answers rageval's ``retriever: {kind: http}`` and ``/generate`` its
``chat: {kind: http}`` (docs/python.md in the rageval repository). ``python -m rageval_bridge
module:object`` does the same from the command line.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from .adapters import ContractError, Keys, documents, generator, nodes, retriever
from .server import Bridge, BridgeServer, make_server, serve, start, url_of

# Written once, in pyproject.toml; the installed package's metadata carries it (a checkout put
# on the path by hand, not installed, has none).
try:
    __version__: str = _version("rageval-bridge")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0+unknown"

__all__ = [
    "Bridge",
    "BridgeServer",
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
