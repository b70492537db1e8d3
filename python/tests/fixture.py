"""Test fixture: rageval's builtin `hash` embedder in Python, LangChain and LlamaIndex stores
built with it over rageval's own chunks, and a chain with its own prompt.

The embedder gives the vectors rageval's `embedder: {kind: hash, dimensions: D}` gives, bit
for bit (a bag of content words, FNV-1a buckets, L2-normalised, rounded to f32), so a store
searched through the bridge can be held to rageval's builtin index over the same chunks. No
network, no model download: LlamaIndex gets this embedder and its own MockLLM explicitly.

Run as a script it serves one of those setups (the Rust CLI tests in tests/bridge.rs start
it): ``python fixture.py --chunks chunks.json --retriever langchain --generate chain``.
"""

import argparse
import ipaddress
import json
import math
import re
import socket
import struct


def forbid_network():
    """Refuse every connection but to loopback, so that a library reaching for the network
    (LlamaIndex fetching NLTK data or a tiktoken file, say) fails loudly instead of passing
    on a machine that happens to be online."""
    connect = socket.socket.connect

    def loopback_only(sock, address):
        host = address[0] if isinstance(address, tuple) else None
        if host is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            try:
                local = host == "localhost" or ipaddress.ip_address(host).is_loopback
            except ValueError:
                local = False
            if not local:
                raise OSError("the bridge tests use no network: a connection to %r was refused" % (address,))
        return connect(sock, address)

    socket.socket.connect = loopback_only


forbid_network()

STOPWORDS = frozenset(
    "a about an and any are as at be by can could do does for from has have how i if in into "
    "is it its me my of on or our s so t that the their them then there these they this those "
    "to was we were what when where which who why will with would you your".split()
)

REFUSAL = "I don't know based on the provided documents."


def words(text):
    """rageval's words: maximal runs of letters and digits, lowercased (Python's and Rust's
    idea of a Unicode letter differ at the edges; the sample is ASCII)."""
    return [w.lower() for w in re.split(r"[^\w]|_", text) if w]


def content_words(text):
    return [w for w in words(text) if w not in STOPWORDS]


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def _f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def hash_vector(text, dimensions):
    counts = [0] * dimensions
    for w in content_words(text):
        counts[fnv1a(w.encode("utf-8")) % dimensions] += 1
    norm = math.sqrt(sum(float(c) * float(c) for c in counts))
    if norm == 0:
        return [0.0] * dimensions
    return [_f32(c / norm) for c in counts]


def embed_text(chunk):
    """What rageval embeds for a chunk: its heading and its text."""
    return "%s\n%s" % (chunk["heading"], chunk["text"])


def langchain_embeddings(dimensions, headings=None):
    """A LangChain ``Embeddings``. ``InMemoryVectorStore`` hands ``embed_documents`` the
    page content alone; ``headings`` (text -> heading) puts each chunk's heading back in
    front, as rageval embeds it."""
    from langchain_core.embeddings import Embeddings

    headings = headings or {}

    class HashEmbeddings(Embeddings):
        def embed_documents(self, texts):
            return [hash_vector("%s\n%s" % (headings.get(t, ""), t), dimensions) for t in texts]

        def embed_query(self, text):
            return hash_vector(text, dimensions)

    return HashEmbeddings()


def langchain_store(chunks, dimensions):
    """An ``InMemoryVectorStore`` of the chunks: page content the text, metadata the id,
    source and heading."""
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    texts = [c["text"] for c in chunks]
    assert len(set(texts)) == len(texts), "chunk texts must be distinct to find their headings"
    store = InMemoryVectorStore(langchain_embeddings(dimensions, {c["text"]: c["heading"] for c in chunks}))
    store.add_documents(
        [
            Document(
                id=c["id"],
                page_content=c["text"],
                metadata={"source": c["source"], "heading": c["heading"]},
            )
            for c in chunks
        ]
    )
    return store


def llamaindex_embedding(dimensions):
    from llama_index.core.embeddings import BaseEmbedding

    class HashEmbedding(BaseEmbedding):
        def _get_query_embedding(self, query):
            return hash_vector(query, dimensions)

        def _get_text_embedding(self, text):
            return hash_vector(text, dimensions)

        async def _aget_query_embedding(self, query):
            return self._get_query_embedding(query)

    return HashEmbedding(model_name="hash-%d" % dimensions)


def llamaindex_retriever(chunks, dimensions, top_k=4):
    """A ``VectorStoreIndex`` retriever of the chunks. Each node embeds its heading and text
    (metadata template ``{value}``, the source excluded), as rageval does."""
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.schema import TextNode

    Settings.embed_model = llamaindex_embedding(dimensions)
    Settings.llm = MockLLM()
    nodes = [
        TextNode(
            id_=c["id"],
            text=c["text"],
            metadata={"source": c["source"], "heading": c["heading"]},
            excluded_embed_metadata_keys=["source"],
            excluded_llm_metadata_keys=["source"],
            metadata_template="{value}",
            text_template="{metadata_str}\n{content}",
        )
        for c in chunks
    ]
    return VectorStoreIndex(nodes).as_retriever(similarity_top_k=top_k)


PROMPT_SYSTEM = (
    "You are the Mekong Code Club handbook assistant. Answer from the handbook excerpts only, "
    "citing them as [n]. If they do not say, reply exactly: {refusal}"
)
PROMPT_HUMAN = "Handbook excerpts:\n{context}\n\nMember's question: {question}"


def handbook_model(prompt_value):
    """A deterministic chat model for the chain: the first excerpt sharing a content word
    with the question, quoted, else the refusal. It reads the prompt the chain built."""
    from langchain_core.messages import AIMessage

    messages = prompt_value.to_messages()
    human = messages[-1].content
    context, _, question = human.partition("\n\nMember's question: ")
    asked = set(content_words(question))
    answer = REFUSAL
    for line in context.split("\n")[1:]:
        m = re.match(r"\[(\d+)\] (.*)", line)
        if m and asked & set(content_words(m.group(2))):
            answer = "The handbook says: %s [%s]" % (m.group(2), m.group(1))
            break
    prompt_chars = sum(len(m.content) for m in messages)
    usage = {
        "input_tokens": (prompt_chars + 3) // 4,
        "output_tokens": (len(answer) + 3) // 4,
        "total_tokens": (prompt_chars + 3) // 4 + (len(answer) + 3) // 4,
    }
    return AIMessage(content=answer, usage_metadata=usage)


def handbook_chain():
    """A "stuff" chain with its own prompt: documents formatted one line each, the prompt,
    the model (its message, with usage, is the chain's output)."""
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    def stuff(inputs):
        return "\n".join(
            "[%d] %s" % (i, " ".join(d.page_content.split())) for i, d in enumerate(inputs["context"], 1)
        )

    prompt = ChatPromptTemplate.from_messages([("system", PROMPT_SYSTEM), ("human", PROMPT_HUMAN)]).partial(
        refusal=REFUSAL
    )
    return RunnablePassthrough.assign(context=stuff) | prompt | RunnableLambda(handbook_model)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", help="JSON list of {id, source, heading, text}")
    parser.add_argument("--dimensions", type=int, default=1024)
    parser.add_argument("--retriever", choices=["langchain", "llamaindex"])
    parser.add_argument("--generate", choices=["chain"])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    from rageval_bridge import serve

    retriever = None
    if args.retriever:
        with open(args.chunks, encoding="utf-8") as f:
            chunks = json.load(f)
        if args.retriever == "langchain":
            retriever = langchain_store(chunks, args.dimensions)
        else:
            retriever = llamaindex_retriever(chunks, args.dimensions)
    generate = handbook_chain() if args.generate == "chain" else None
    serve(retriever=retriever, generate=generate, port=args.port)


if __name__ == "__main__":
    main()
