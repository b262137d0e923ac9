"""Zip archives: each member a source of its own, read in memory (nothing is extracted to
disk, so a member's name is never a path). Limits on the member count, the total
uncompressed size and each member's compression ratio turn a zip bomb away before
anything is inflated, and reading stops at the size a member declared."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kb_ai.errors import DocumentError


@dataclass(frozen=True)
class ArchiveLimits:
    max_members: int = 500
    max_total_bytes: int = 200_000_000
    max_ratio: int = 100
    max_member_bytes: int = 50_000_000


def _open(data: bytes, name: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, EOFError, ValueError) as exc:
        raise DocumentError(
            f"{name}: not a readable zip archive (corrupt or truncated)", cause="corrupt"
        ) from exc


def list_members(data: bytes, name: str, limits: ArchiveLimits, wanted) -> list[str]:  # noqa: ANN001
    """The names of the members worth compiling (``wanted(member name)`` says which), in
    archive order; a DocumentError when the archive breaks a limit."""
    with _open(data, name) as zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > limits.max_members:
            raise DocumentError(
                f"{name}: {len(infos):,} files in the archive, over the limit of "
                f"{limits.max_members:,} (a zip bomb?)",
                cause="too_large",
                hint="unpack it and compile the folder, or raise max_archive_members",
            )
        total = sum(i.file_size for i in infos)
        if total > limits.max_total_bytes:
            raise DocumentError(
                f"{name}: {total:,} bytes once unpacked, over the limit of "
                f"{limits.max_total_bytes:,} (a zip bomb?)",
                cause="too_large",
                hint="unpack it and compile the folder, or raise max_archive_bytes",
            )
        for info in infos:
            ratio = info.file_size / max(info.compress_size, 1)
            if info.file_size > 1_000_000 and ratio > limits.max_ratio:
                raise DocumentError(
                    f"{name}: member {info.filename} unpacks {ratio:,.0f} times its size, over "
                    f"the limit of {limits.max_ratio} (a zip bomb?)",
                    cause="too_large",
                    hint="unpack it yourself if you trust it, or raise max_archive_ratio",
                )
        return [i.filename for i in infos if _visible(i.filename) and wanted(i.filename)]


def read_member(data: bytes, name: str, member: str, limits: ArchiveLimits) -> bytes:
    """The bytes of one member, never more than it declared nor than the limits allow."""
    with _open(data, name) as zf:
        try:
            info = zf.getinfo(member)
        except KeyError as exc:
            raise DocumentError(
                f"{name}: no member {member} in the archive", cause="corrupt"
            ) from exc
        cap = min(info.file_size, limits.max_member_bytes)
        if info.file_size > limits.max_member_bytes:
            raise DocumentError(
                f"{name}: member {member} is {info.file_size:,} bytes, over the "
                f"{limits.max_member_bytes:,}-byte limit",
                cause="too_large",
            )
        try:
            with zf.open(info) as f:
                out = f.read(cap + 1)
        except (zipfile.BadZipFile, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
            # RuntimeError: an encrypted member; NotImplementedError: an unknown compression
            raise DocumentError(
                f"{name}: member {member} cannot be read ({exc})", cause="corrupt"
            ) from exc
        if len(out) > cap:
            raise DocumentError(
                f"{name}: member {member} unpacks to more than it declared (a zip bomb?)",
                cause="too_large",
            )
        return out


def compiled_member(member: str, text_suffixes: frozenset[str]) -> bool:
    """Whether kb-ai compiles the member ``member`` of an archive, on disk or uploaded
    alike: a document, or a text file with one of ``text_suffixes``; never an archive
    inside it."""
    from compiler.documents.formats import DOCUMENT_EXTENSIONS

    suffix = PurePosixPath(member).suffix.lower()
    return suffix != ".zip" and (suffix in text_suffixes or suffix in DOCUMENT_EXTENSIONS)


def archive_members(path: Path, limits: ArchiveLimits, text_suffixes: frozenset[str]) -> list[str]:
    """The members of the zip at ``path`` that kb-ai compiles (documents and text files
    with one of ``text_suffixes``; nested archives are not opened), in archive order."""

    def wanted(member: str) -> bool:
        return compiled_member(member, text_suffixes)

    try:
        size = path.stat().st_size
        if size > limits.max_member_bytes:
            raise DocumentError(
                f"{path}: {size:,} bytes is over the {limits.max_member_bytes:,}-byte limit",
                cause="too_large",
                hint="raise max_document_bytes in kb-ai.toml",
            )
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read it ({exc.strerror})", cause="corrupt") from exc
    members = list_members(data, str(path), limits, wanted)
    if not members:
        raise DocumentError(f"{path}: nothing in the archive kb-ai can read", cause="no_text")
    return members


def _visible(member: str) -> bool:
    parts = PurePosixPath(member).parts
    return not any(p.startswith(".") or p == "__MACOSX" for p in parts)
