"""The bridge over real HTTP on loopback: plain functions, LangChain and LlamaIndex objects.

Run with ``python -m unittest`` in ``python/tests``, against the installed package (``pip
install ./python``: the src/ layout keeps the checkout off the path). The LangChain and
LlamaIndex tests need ``langchain-core`` and ``llama-index-core``; without them they are
skipped, except under ``CI=true``, where a missing package fails them.
"""

import contextlib
import importlib
import importlib.metadata
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

import fixture
import rageval_bridge
from rageval_bridge import Keys, start, url_of

CHUNKS = [
    {"id": "fee.md#0", "source": "fee.md", "heading": "Membership fee", "text": "Membership costs 10 US dollars per term."},
    {"id": "fee.md#1", "source": "fee.md", "heading": "Refunds", "text": "Half the fee comes back\nin the first month."},
    {"id": "laptops.md#0", "source": "laptops.md", "heading": "Loan period", "text": "Laptops are lent for 7 days."},
]


def need(module):
    """Import ``module``, or skip the test (fail it under CI=true) when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if os.environ.get("CI") == "true":
            raise AssertionError("%s is not installed (CI=true does not skip): %s" % (module, e))
        raise unittest.SkipTest("%s is not installed" % module)


def post(server, path, body):
    """(status, JSON reply) of ``POST path``."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url_of(server) + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


class Served(unittest.TestCase):
    """A server per test, stopped after it."""

    def serve(self, **kw):
        server = start(**kw)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return server


class PlainFunctions(Served):
    def test_a_function_retriever_and_generator_answer_both_contracts(self):
        def search(query, k):
            return [dict(c, score=1.0 - i / 10) for i, c in enumerate(CHUNKS)][: k + 1]

        def answer(question, passages):
            return {"answer": "%s: %s" % (question, passages[0]["id"]), "usage": {"prompt_tokens": 9, "completion_tokens": 2}}

        server = self.serve(retriever=search, generate=answer)
        status, reply = post(server, "/retrieve", {"query": "fee", "k": 2})
        self.assertEqual(status, 200)
        # Cut to k, in the order given, ids and headings kept, scores as given.
        self.assertEqual([h["id"] for h in reply["hits"]], ["fee.md#0", "fee.md#1"])
        self.assertEqual(reply["hits"][1], dict(CHUNKS[1], score=0.9))
        status, reply = post(server, "/generate", {"question": "Fee?", "passages": [dict(CHUNKS[0], score=0.5)]})
        self.assertEqual((status, reply), (200, {"answer": "Fee?: fee.md#0", "usage": {"prompt_tokens": 9, "completion_tokens": 2}}))
        self.assertEqual(
            server.bridge.describe("http://x"),
            "rageval-bridge on http://x serves /retrieve from function search; /generate from function answer",
        )

    def test_broken_requests_and_objects_get_the_status_rageval_acts_on(self):
        def search(query, k):
            if query == "boom":
                raise RuntimeError("the index is locked")
            return [{"id": "a", "source": "a.md", "text": "A.", "score": None if query == "none" else "high"}]

        server = self.serve(retriever=search, generate=lambda q, p: 42)
        cases = [
            ("/retrieve", b"{not json", 400, "the body is not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
            ("/retrieve", {"query": "x", "k": 0}, 400, 'the body must be {"query": "...", "k": N} with N at least 1'),
            ("/retrieve", {"query": "none", "k": 1}, 422, "a hit has no score (a retriever's documents must carry one in metadata['score'])"),
            ("/retrieve", {"query": "x", "k": 1}, 422, "a hit's score 'high' is not a number"),
            ("/retrieve", {"query": "boom", "k": 1}, 500, "RuntimeError: the index is locked"),
            ("/generate", {"question": "q"}, 400, 'the body must be {"question": "...", "passages": [{id, source, heading, text, score}]}'),
            ("/generate", {"question": "q", "passages": []}, 422, "the answer is int, not text"),
            ("/search", {}, 404, "no such path /search: this bridge serves /retrieve and /generate"),
        ]
        for path, body, status, message in cases:
            with self.subTest(path=path, body=body):
                # The team's traceback goes to the bridge's stderr, kept here.
                with contextlib.redirect_stderr(io.StringIO()) as err:
                    self.assertEqual(post(server, path, body), (status, {"error": {"message": message}}))
                self.assertEqual("Traceback" in err.getvalue(), status == 500)

    def test_a_hit_without_an_id_gets_one_from_its_source_and_text(self):
        server = self.serve(retriever=lambda q, k: [{"source": "a.md", "text": "Same text.", "score": 0.5}])
        _, first = post(server, "/retrieve", {"query": "x", "k": 1})
        _, again = post(server, "/retrieve", {"query": "y", "k": 1})
        self.assertEqual(first["hits"][0]["id"], again["hits"][0]["id"])
        self.assertTrue(first["hits"][0]["id"].startswith("a.md#"))

    def test_the_module_entry_point_prints_one_line_naming_what_it_serves(self):
        here = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, here)
        with open(os.path.join(here, "app_plain.py"), "w") as f:
            f.write(
                "def search(query, k):\n"
                "    return [{'text': 'A.', 'source': 'a.md', 'score': 0.5}][:k]\n\n"
                "def shout(question, passages):\n"
                "    return question.upper()\n\n"
                "bridge = {'retriever': search}\n"
            )
        proc = subprocess.Popen(
            [sys.executable, "-m", "rageval_bridge", "app_plain:bridge", "--generate", "app_plain:shout", "--port", "0"],
            cwd=here,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        line = proc.stdout.readline()
        self.assertRegex(
            line, r"^rageval-bridge on http://127\.0\.0\.1:\d+ serves /retrieve from function search; /generate from function shout\n$"
        )
        url = line.split()[2]
        with urllib.request.urlopen(url + "/") as r:
            self.assertEqual(json.loads(r.read()), {"retrieve": "function search", "generate": "function shout"})
        req = urllib.request.Request(
            url + "/generate", data=json.dumps({"question": "fee?", "passages": []}).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req) as r:
            self.assertEqual(json.loads(r.read()), {"answer": "FEE?"})

    def test_the_fixture_refuses_every_connection_but_loopback(self):
        with self.assertRaisesRegex(OSError, "the bridge tests use no network"):
            urllib.request.urlopen("http://192.0.2.1/", timeout=5)

    def test_the_fixture_embedder_is_ragevals_hash_embedder(self):
        # The reference values of rageval's src/adapters/embed/hash.rs and base/text.rs.
        self.assertEqual(fixture.fnv1a(b""), 0xCBF29CE484222325)
        self.assertEqual(fixture.fnv1a(b"a"), 0xAF63DC4C8601EC8C)
        self.assertEqual(fixture.words("Don't use Wi-Fi, Sophea! snake_case"), ["don", "t", "use", "wi", "fi", "sophea", "snake", "case"])
        v = fixture.hash_vector("Membership costs 10 US dollars per term.", 1024)
        self.assertAlmostEqual(sum(x * x for x in v), 1.0, places=6)
        self.assertEqual(v, fixture.hash_vector("membership COSTS 10 us dollars, per term", 1024))
        self.assertEqual(fixture.hash_vector("how is it", 8), [0.0] * 8)


class LangChain(Served):
    def setUp(self):
        need("langchain_core")

    def test_a_store_without_a_relevance_function_falls_back_to_its_raw_scores_and_says_so(self):
        store = fixture.langchain_store(CHUNKS, 64)
        server = self.serve(retriever=store)
        self.assertIn(
            "/retrieve from LangChain InMemoryVectorStore, its raw scores (similarity_search_with_score: the store has no relevance function",
            server.bridge.describe("u"),
        )
        _, reply = post(server, "/retrieve", {"query": "How much does membership cost?", "k": 2})
        hits = reply["hits"]
        self.assertEqual(hits[0]["id"], "fee.md#0")
        self.assertEqual((hits[0]["source"], hits[0]["heading"]), ("fee.md", "Membership fee"))
        # The store's own score, unchanged.
        want = store.similarity_search_with_score("How much does membership cost?", k=2)
        self.assertEqual([h["score"] for h in hits], [s for _, s in want])

    def test_a_store_with_a_relevance_function_is_searched_by_relevance(self):
        from langchain_core.vectorstores import InMemoryVectorStore

        class Scored(InMemoryVectorStore):
            def _select_relevance_score_fn(self):
                return lambda cosine: (1.0 + cosine) / 2.0

        store = Scored(fixture.langchain_embeddings(64))
        store.add_texts([c["text"] for c in CHUNKS], metadatas=[{"source": c["source"]} for c in CHUNKS], ids=[c["id"] for c in CHUNKS])
        server = self.serve(retriever=store)
        self.assertIn("its relevance scores (similarity_search_with_relevance_scores", server.bridge.describe("u"))
        _, reply = post(server, "/retrieve", {"query": "laptops lent", "k": 1})
        cosine = store.similarity_search_with_score("laptops lent", k=1)[0][1]
        self.assertEqual(reply["hits"], [{"id": "laptops.md#0", "source": "laptops.md", "text": CHUNKS[2]["text"], "score": (1 + cosine) / 2}])

    def test_a_retriever_needs_scores_in_metadata_under_the_configured_keys(self):
        from langchain_core.documents import Document
        from langchain_core.retrievers import BaseRetriever

        class Keyword(BaseRetriever):
            def _get_relevant_documents(self, query, *, run_manager):
                return [
                    Document(page_content=c["text"], metadata={"doc": c["id"], "file": c["source"], "section": c["heading"], "rel": 0.5})
                    for c in CHUNKS
                    if set(fixture.content_words(query)) & set(fixture.content_words(c["text"]))
                ]

        server = self.serve(retriever=Keyword(), keys=Keys(id_key="doc", source_key="file", heading_key="section", score_key="rel"))
        self.assertIn("/retrieve from LangChain Keyword, scores from metadata['rel']", server.bridge.describe("u"))
        _, reply = post(server, "/retrieve", {"query": "fee back", "k": 5})
        self.assertEqual(reply["hits"], [dict(CHUNKS[1], score=0.5)])
        # A vector store's retriever drops the scores: the store itself has them.
        store = fixture.langchain_store(CHUNKS, 64)
        bare = self.serve(retriever=store.as_retriever())
        status, reply = post(bare, "/retrieve", {"query": "fee", "k": 2})
        self.assertEqual(status, 422)
        self.assertIn("metadata['score']", reply["error"]["message"])

    def test_a_chain_with_its_own_prompt_answers_with_its_usage(self):
        server = self.serve(generate=fixture.handbook_chain())
        self.assertIn("/generate from LangChain RunnableSequence, invoked with {'question': question, 'context': documents}", server.bridge.describe("u"))
        passages = [dict(CHUNKS[1], score=0.4), dict(CHUNKS[0], score=0.3)]
        status, reply = post(server, "/generate", {"question": "What does membership cost?", "passages": passages})
        self.assertEqual(status, 200)
        self.assertEqual(reply["answer"], "The handbook says: Membership costs 10 US dollars per term. [2]")
        prompt = fixture.handbook_chain().steps[1].invoke(
            {"question": "What does membership cost?", "context": "[1] Half the fee comes back in the first month.\n[2] Membership costs 10 US dollars per term."}
        )
        chars = sum(len(m.content) for m in prompt.to_messages())
        self.assertEqual(reply["usage"], {"prompt_tokens": (chars + 3) // 4, "completion_tokens": (len(reply["answer"]) + 3) // 4})
        _, refused = post(server, "/generate", {"question": "Is there parking?", "passages": passages})
        self.assertEqual(refused, {"answer": fixture.REFUSAL, "usage": refused["usage"]})


class LlamaIndex(Served):
    def setUp(self):
        need("llama_index.core")

    def test_a_retriever_is_asked_for_each_k_and_reports_its_node_scores(self):
        retriever = fixture.llamaindex_retriever(CHUNKS, 64, top_k=1)
        server = self.serve(retriever=retriever)
        self.assertIn("/retrieve from LlamaIndex VectorIndexRetriever, NodeWithScore scores, similarity_top_k set to each k", server.bridge.describe("u"))
        _, reply = post(server, "/retrieve", {"query": "membership fee refunds", "k": 3})
        self.assertEqual(len(reply["hits"]), 3)
        self.assertEqual(reply["hits"][0]["id"], "fee.md#0")
        retriever.similarity_top_k = 3
        want = retriever.retrieve("membership fee refunds")
        self.assertEqual([h["score"] for h in reply["hits"]], [n.score for n in want])
        self.assertEqual({h["heading"] for h in reply["hits"]}, {c["heading"] for c in CHUNKS})

    def test_a_synthesizer_and_a_query_engine_answer_through_generate(self):
        from llama_index.core import get_response_synthesizer

        retriever = fixture.llamaindex_retriever(CHUNKS, 64)
        engine = retriever._index.as_query_engine()
        for obj, name in [(get_response_synthesizer(), "LlamaIndex CompactAndRefine"), (engine, "LlamaIndex RetrieverQueryEngine's CompactAndRefine")]:
            server = self.serve(generate=obj)
            self.assertIn("/generate from %s" % name, server.bridge.describe("u"))
            status, reply = post(server, "/generate", {"question": "What is the loan period?", "passages": [dict(CHUNKS[2], score=0.7)]})
            self.assertEqual(status, 200)
            # MockLLM answers with the prompt it was given: LlamaIndex's own, with the passage.
            self.assertIn("Laptops are lent for 7 days.", reply["answer"])
            self.assertIn("What is the loan period?", reply["answer"])
            self.assertNotIn("usage", reply)


class Package(unittest.TestCase):
    def test_the_version_is_pyprojects_read_from_the_installed_metadata(self):
        pyproject = os.path.join(os.path.dirname(__file__), os.pardir, "pyproject.toml")
        with open(pyproject, encoding="utf-8") as f:
            written = re.search(r'^version = "([^"]+)"$', f.read(), re.M).group(1)
        self.assertEqual(rageval_bridge.__version__, written)
        self.assertEqual(importlib.metadata.version("rageval-bridge"), written)

    def test_the_tests_import_the_installed_package_with_its_type_marker(self):
        # Not the checkout: python/src is never on the path, so what is tested is what pip installed.
        where = os.path.dirname(os.path.abspath(rageval_bridge.__file__))
        self.assertNotEqual(where, os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, "src", "rageval_bridge")))
        self.assertTrue(os.path.isfile(os.path.join(where, "py.typed")), "py.typed is not installed beside %s" % where)

    def test_the_public_api_is_annotated(self):
        import inspect

        for name in rageval_bridge.__all__:
            obj = getattr(rageval_bridge, name)
            fn = obj.__init__ if inspect.isclass(obj) else obj
            if inspect.isclass(obj) and issubclass(obj, Exception):
                continue
            with self.subTest(name=name):
                sig = inspect.signature(fn)
                unannotated = [p for p in sig.parameters.values() if p.name != "self" and p.annotation is inspect.Parameter.empty]
                self.assertEqual(unannotated, [])
                self.assertIsNot(sig.return_annotation, inspect.Signature.empty)

    def test_it_imports_without_langchain_or_llamaindex(self):
        code = "import sys; sys.modules['langchain_core'] = None; sys.modules['llama_index'] = None; import rageval_bridge; print(rageval_bridge.__version__)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        self.assertEqual(out.stdout, rageval_bridge.__version__ + "\n")


if __name__ == "__main__":
    unittest.main()
