"""``python -m rageval_bridge module:object``: serve what ``object`` names.

``object`` is a dict or any object with ``retriever`` and/or ``generate`` (and optionally
``keys``, ``question_key``, ``documents_key``), or a function returning one; ``--retriever``
and ``--generate`` name each part on its own instead. With ``$RAGEVAL_BRIDGE_TOKEN`` set, every
request must carry it as ``Authorization: Bearer``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any, Dict, Optional, Sequence

from .server import serve


def _load(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise SystemExit("rageval-bridge: %r is not module:object" % spec)
    # The team's script sits in the folder they run from.
    sys.path.insert(0, os.getcwd())
    module = importlib.import_module(module_name)
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SystemExit("rageval-bridge: module %r has no %r" % (module_name, attr))
    return obj


def _parts(obj: Any) -> Dict[str, Any]:
    if callable(obj) and not hasattr(obj, "invoke") and not hasattr(obj, "retrieve"):
        obj = obj()
    get = obj.get if isinstance(obj, dict) else lambda k, d=None: getattr(obj, k, d)
    names = ("retriever", "generate", "keys", "question_key", "documents_key")
    return {k: get(k) for k in names if get(k) is not None}


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m rageval_bridge",
        description="Serve a retriever at POST /retrieve and a generation step at POST /generate for rageval.",
    )
    parser.add_argument("app", nargs="?", help="module:object with `retriever` and/or `generate`")
    parser.add_argument("--retriever", metavar="MODULE:OBJECT", help="the retriever alone")
    parser.add_argument("--generate", metavar="MODULE:OBJECT", help="the generation step alone")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (0 picks a free one; the first line names it)")
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        help="a Host header to answer besides localhost, 127.0.0.1, [::1] and the bound address (repeatable)",
    )
    parser.add_argument("--log", action="store_true", help="log every request to stderr")
    args = parser.parse_args(argv)
    parts = _parts(_load(args.app)) if args.app else {}
    if args.retriever:
        parts["retriever"] = _load(args.retriever)
    if args.generate:
        parts["generate"] = _load(args.generate)
    if "retriever" not in parts and "generate" not in parts:
        parser.error("name what to serve: module:object, --retriever or --generate")
    serve(port=args.port, host=args.host, log=args.log, allowed_hosts=args.allow_host, **parts)


if __name__ == "__main__":
    main()
