"""Turn the objects a team already has into the two functions rageval's contracts need.

* ``retrieve(query, k) -> [hit]``, each hit ``{"id", "source", "heading", "text", "score"}``,
  best first, from a LangChain ``VectorStore`` or ``BaseRetriever``, a LlamaIndex
  ``BaseRetriever`` or a plain function.
* ``generate(question, passages) -> {"answer", "usage"?}`` from a LangChain ``Runnable`` (the
  usual "stuff" chain), a LlamaIndex response synthesizer or query engine, or a plain function.

Nothing here imports LangChain or LlamaIndex: objects are recognised by the methods they have,
so the package imports (and its plain-function path works) without either installed.
"""

from __future__ import annotations

import hashlib
import math
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

# A hit of ``/retrieve`` (``{id, source, heading?, text, score}``), a passage rageval sends to
# ``/generate`` (a hit as rageval kept it) and a ``/generate`` reply (``{answer, usage?}``).
Hit = Dict[str, Any]
Passage = Mapping[str, Any]
Reply = Dict[str, Any]


class ContractError(Exception):
    """An object gave something the contract cannot carry (a hit without a score, an answer
    that is no text): the team's setup, not a passing failure, so rageval does not retry it."""


class Keys:
    """Where a document's id, source and heading are found in its metadata (configurable),
    and, for a retriever whose documents carry their score, the score."""

    def __init__(
        self, id_key: str = "id", source_key: str = "source", heading_key: str = "heading", score_key: str = "score"
    ) -> None:
        self.id = id_key
        self.source = source_key
        self.heading = heading_key
        self.score = score_key


def _name(obj):
    cls = type(obj)
    return cls.__name__


def _library(obj):
    module = type(obj).__module__ or ""
    if module.startswith(("langchain", "langgraph")):
        return "LangChain"
    if module.startswith("llama_index"):
        return "LlamaIndex"
    return None


def _hit(text, metadata, score, keys, doc_id=None):
    """One hit of the contract; the id is the document's own, else its metadata's, else one
    derived from its source and text (stable, so a passage keeps its name across questions)."""
    metadata = metadata or {}
    if score is None:
        raise ContractError(
            "a hit has no score (a retriever's documents must carry one in metadata[%r])" % keys.score
        )
    try:
        score = float(score)
    except (TypeError, ValueError):
        raise ContractError("a hit's score %r is not a number" % (score,))
    if not math.isfinite(score):
        raise ContractError("a hit's score %r is not a finite number" % (score,))
    source = str(metadata.get(keys.source, ""))
    heading = metadata.get(keys.heading)
    ident = doc_id or metadata.get(keys.id)
    if not ident:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
        ident = "%s#%s" % (source, digest) if source else digest
    hit = {"id": str(ident), "source": source, "text": text, "score": score}
    if heading is not None:
        hit["heading"] = str(heading)
    return hit


def _from_document(doc, score, keys):
    """A LangChain ``Document`` (``page_content``, ``metadata``, ``id``)."""
    return _hit(doc.page_content, doc.metadata, score, keys, getattr(doc, "id", None))


def _from_node(node_with_score, keys):
    """A LlamaIndex ``NodeWithScore``: the node's text and metadata, its id, the score."""
    node = node_with_score.node
    text = node.get_content() if not hasattr(node, "text") else node.text
    return _hit(text, node.metadata, node_with_score.score, keys, getattr(node, "node_id", None))


def _from_any(item, keys):
    """A plain function's hit: a dict of the contract, a (document, score) pair, a
    ``NodeWithScore`` or a document whose metadata holds its score."""
    if isinstance(item, dict):
        if "text" not in item:
            raise ContractError("a hit %r has no `text`" % (sorted(item),))
        meta = {keys.source: item.get("source", ""), keys.id: item.get("id")}
        if item.get("heading") is not None:
            meta[keys.heading] = item["heading"]
        return _hit(str(item["text"]), meta, item.get("score"), keys)
    if isinstance(item, (tuple, list)) and len(item) == 2:
        doc, score = item
        return _from_document(doc, score, keys)
    if hasattr(item, "node") and hasattr(item, "score"):
        return _from_node(item, keys)
    if hasattr(item, "page_content"):
        return _from_document(item, (item.metadata or {}).get(keys.score), keys)
    raise ContractError("cannot read a hit from %s" % _name(item))


def _relevance_available(store):
    """Whether a LangChain vector store scores relevance (0 worst, 1 best) itself: it has a
    relevance function, or its own relevance search."""
    try:
        store._select_relevance_score_fn()
        return True
    except NotImplementedError:
        pass
    except Exception:
        return True
    for cls in type(store).__mro__:
        if cls.__name__ == "VectorStore":
            return False
        if "_similarity_search_with_relevance_scores" in vars(cls) or (
            "similarity_search_with_relevance_scores" in vars(cls)
        ):
            return True
    return False


class Retriever:
    """``retrieve(query, k)`` over a team's object, and a line saying what it is."""

    def __init__(self, fn: Callable[[str, int], List[Hit]], description: str) -> None:
        self._fn = fn
        self.description = description

    def __call__(self, query: str, k: int) -> List[Hit]:
        hits = self._fn(query, k)
        if len(hits) > k:
            hits = hits[:k]
        return hits


def retriever(obj: Any, keys: Optional[Keys] = None) -> Retriever:
    """The retriever for ``obj``: a LangChain ``VectorStore`` or ``BaseRetriever``, a
    LlamaIndex ``BaseRetriever``, or a function ``f(query, k)`` returning hits."""
    keys = keys or Keys()
    lib = _library(obj) or "plain"
    if hasattr(obj, "similarity_search_with_score"):
        if _relevance_available(obj):
            def search(query, k):
                pairs = obj.similarity_search_with_relevance_scores(query, k=k)
                return [_from_document(d, s, keys) for d, s in pairs]

            how = "its relevance scores (similarity_search_with_relevance_scores: 0 worst, 1 best)"
        else:
            def search(query, k):
                pairs = obj.similarity_search_with_score(query, k=k)
                return [_from_document(d, s, keys) for d, s in pairs]

            how = (
                "its raw scores (similarity_search_with_score: the store has no relevance "
                "function; minScore gates them as they are, so they must grow with relevance)"
            )
        return Retriever(search, "%s %s, %s" % (lib, _name(obj), how))
    if hasattr(obj, "retrieve") and not hasattr(obj, "invoke"):
        # LlamaIndex: a retriever built for a fixed top k (`similarity_top_k`) is asked for
        # each k by setting it, one request at a time.
        lock = threading.Lock()
        sets_k = hasattr(obj, "similarity_top_k")

        def search(query, k):
            with lock:
                if sets_k:
                    obj.similarity_top_k = k
                nodes = obj.retrieve(query)
            return [_from_node(n, keys) for n in nodes]

        how = "NodeWithScore scores" + (", similarity_top_k set to each k" if sets_k else "")
        return Retriever(search, "%s %s, %s" % (lib if lib != "plain" else "LlamaIndex", _name(obj), how))
    if hasattr(obj, "invoke"):
        # LangChain: `k` reaches retrievers that take search arguments (a vector store's
        # retriever); every other one returns what it returns, cut to k.
        def search(query, k):
            docs = obj.invoke(query, k=k)
            return [_from_any(d, keys) for d in docs]

        how = "scores from metadata[%r]" % keys.score
        return Retriever(search, "%s %s, %s" % (lib if lib != "plain" else "LangChain", _name(obj), how))
    if callable(obj):
        def search(query, k):
            return [_from_any(h, keys) for h in obj(query, k)]

        return Retriever(search, "function %s" % getattr(obj, "__name__", _name(obj)))
    raise TypeError(
        "cannot serve %s as a retriever: give a LangChain VectorStore or BaseRetriever, a "
        "LlamaIndex BaseRetriever, or a function f(query, k) returning hits" % _name(obj)
    )


def _usage(prompt_tokens, completion_tokens):
    if prompt_tokens is None or completion_tokens is None:
        return None
    return {"prompt_tokens": int(prompt_tokens), "completion_tokens": int(completion_tokens)}


def _answer_of(out):
    """The answer text and usage a chain's output carries: a string, a chat message (with
    ``usage_metadata``), a dict with ``answer`` (``create_retrieval_chain``), a LlamaIndex
    ``Response``, or the contract's own dict."""
    usage = None
    if isinstance(out, dict):
        if "answer" not in out:
            raise ContractError("the chain's output has no `answer` (keys: %s)" % sorted(out))
        usage = out.get("usage")
        out = out["answer"]
    if hasattr(out, "content") and not isinstance(out, str):
        meta = getattr(out, "usage_metadata", None) or {}
        usage = usage or _usage(meta.get("input_tokens"), meta.get("output_tokens"))
        out = out.content
    elif hasattr(out, "response") and not isinstance(out, str):
        out = out.response
    if not isinstance(out, str):
        raise ContractError("the answer is %s, not text" % _name(out))
    reply = {"answer": out}
    if usage is not None:
        reply["usage"] = usage
    return reply


class Generator:
    """``generate(question, passages)`` over a team's object, and a line saying what it is."""

    def __init__(self, fn: Callable[[str, Sequence[Passage]], Any], description: str) -> None:
        self._fn = fn
        self.description = description

    def __call__(self, question: str, passages: Sequence[Passage]) -> Reply:
        return _answer_of(self._fn(question, passages))


def documents(passages: Sequence[Passage], keys: Optional[Keys] = None) -> List[Any]:
    """The passages rageval sent as LangChain ``Document`` objects, metadata under the
    configured keys (plus ``score``), for a chain of your own."""
    from langchain_core.documents import Document

    keys = keys or Keys()
    return [
        Document(
            page_content=p["text"],
            id=p["id"],
            metadata={keys.id: p["id"], keys.source: p["source"], keys.heading: p.get("heading", ""), "score": p["score"]},
        )
        for p in passages
    ]


def nodes(passages: Sequence[Passage], keys: Optional[Keys] = None) -> List[Any]:
    """The passages as LlamaIndex ``NodeWithScore`` objects, for a synthesizer."""
    from llama_index.core.schema import NodeWithScore, TextNode

    keys = keys or Keys()
    return [
        NodeWithScore(
            node=TextNode(
                text=p["text"],
                id_=p["id"],
                metadata={keys.source: p["source"], keys.heading: p.get("heading", "")},
            ),
            score=p["score"],
        )
        for p in passages
    ]


def generator(
    obj: Any, keys: Optional[Keys] = None, question_key: str = "question", documents_key: str = "context"
) -> Generator:
    """The generation step for ``obj``: a LangChain ``Runnable`` taking
    ``{question_key: question, documents_key: [Document]}`` (a stuff chain), a LlamaIndex
    response synthesizer or query engine, or a function ``f(question, passages)`` returning
    the answer text or ``{"answer", "usage"?}``."""
    keys = keys or Keys()
    lib = _library(obj) or "plain"
    # A query engine has `synthesize` too, taking a QueryBundle: its synthesizer takes text.
    synth = getattr(obj, "_response_synthesizer", None) or (obj if hasattr(obj, "synthesize") else None)
    if synth is not None and hasattr(synth, "synthesize"):
        def run(question, passages):
            return synth.synthesize(question, nodes=nodes(passages, keys))

        what = _name(synth) if synth is obj else "%s's %s" % (_name(obj), _name(synth))
        return Generator(run, "LlamaIndex %s" % what)
    if hasattr(obj, "invoke"):
        def run(question, passages):
            return obj.invoke({question_key: question, documents_key: documents(passages, keys)})

        return Generator(
            run,
            "%s %s, invoked with {%r: question, %r: documents}"
            % (lib if lib != "plain" else "LangChain", _name(obj), question_key, documents_key),
        )
    if callable(obj):
        return Generator(obj, "function %s" % getattr(obj, "__name__", _name(obj)))
    raise TypeError(
        "cannot serve %s as a generation step: give a LangChain Runnable, a LlamaIndex "
        "response synthesizer or query engine, or a function f(question, passages)" % _name(obj)
    )
