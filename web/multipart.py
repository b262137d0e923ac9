"""Reading a multipart upload with a size limit per file, applied while the file streams
in: past its limit a file's bytes are dropped as they arrive (never spooled to disk or
memory), and the file is reported too large by name, with the setting that limits it.
Documents (PDF, Office, archives: converted by the worker) and text files have limits
of their own, since a 20 MB PDF holds far less text than a 20 MB text file."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass

from starlette.datastructures import FormData, Headers, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from compiler.documents import format_of
from kb_ai.errors import UsageError

MAX_NAME_CHARS = 255  # what file systems hold; a longer name is refused, saying so
# The parser refuses a part's header line over 4,224 bytes as "Invalid multipart data";
# past this many bytes the Content-Disposition line (the file name) is said to be why.
_LONG_HEADER = 4_096
_DISPOSITION = b"content-disposition:"


def check_name(filename: str) -> None:
    """Refuse a file name longer than MAX_NAME_CHARS, by its length and the limit."""
    if len(filename) > MAX_NAME_CHARS:
        raise UsageError(
            f"A file name is {len(filename):,} characters long, over the "
            f"{MAX_NAME_CHARS}-character limit for a file name",
            hint="rename the file and upload it again",
        )


def _long_name_error() -> UsageError:
    return UsageError(
        f"A file name in the upload is over {_LONG_HEADER:,} bytes long; the limit for a "
        f"file name is {MAX_NAME_CHARS} characters",
        hint="rename the file and upload it again",
    )


@dataclass(frozen=True)
class FileLimit:
    """How many bytes a file may have, and the setting that says so."""

    max_bytes: int
    setting: str
    what: str  # "document", "text file"


def file_limit(filename: str, *, max_text_bytes: int, max_document_bytes: int) -> FileLimit:
    """The limit of an uploaded file, by its name: a document the worker converts, or text."""
    if format_of(filename):
        return FileLimit(max_document_bytes, "max_document_bytes", "document")
    return FileLimit(max_text_bytes, "max_source_bytes", "text file")


class CappedParser(MultiPartParser):
    """Starlette's multipart parser, holding each file to the limit ``limit_of(filename)``
    gives; ``oversize`` maps each file that passed its limit to that limit."""

    def __init__(
        self,
        headers: Headers,
        stream: AsyncGenerator[bytes, None],
        *,
        limit_of,  # noqa: ANN001 - Callable[[str], FileLimit]
        max_files: int,
        max_fields: int,
        max_part_size: int,
    ) -> None:
        super().__init__(
            headers,
            self._watch(stream),
            max_files=max_files,
            max_fields=max_fields,
            max_part_size=max_part_size,
        )
        self.long_name = False  # a Content-Disposition line too long for the parser
        self.limit_of = limit_of
        self.oversize: dict[int, FileLimit] = {}  # id(UploadFile) -> its limit
        self._seen: dict[int, int] = {}  # id(UploadFile) -> bytes received

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        upload = self._current_part.file
        if upload is None:
            super().on_part_data(data, start, end)
            return
        key = id(upload)
        if key in self.oversize:
            return  # past its limit: the rest of it is dropped as it arrives
        seen = self._seen.get(key, 0) + end - start
        self._seen[key] = seen
        limit = self.limit_of(upload.filename or "")
        if seen > limit.max_bytes:
            self.oversize[key] = limit
            return
        super().on_part_data(data, start, end)

    async def _watch(self, stream: AsyncGenerator[bytes, None]) -> AsyncGenerator[bytes, None]:
        """``stream``, noting a Content-Disposition line over _LONG_HEADER bytes (the
        parser then fails, without saying why)."""
        tail = b""
        async for chunk in stream:
            if not self.long_name:
                lines = (tail + chunk).split(b"\n")
                tail = lines.pop()  # a line the next chunk goes on with
                n = min(len(tail), len(_DISPOSITION))
                if tail[:n].lower() != _DISPOSITION[:n]:
                    tail = b""  # not a Content-Disposition line: no need to follow it
                tail = tail[: _LONG_HEADER + 1]
                self.long_name = any(
                    len(line) > _LONG_HEADER and line[: len(_DISPOSITION)].lower() == _DISPOSITION
                    for line in (*lines, tail)
                )
            yield chunk

    def limit_passed(self, upload: UploadFile) -> FileLimit | None:
        return self.oversize.get(id(upload))


async def parse_capped(parser: CappedParser) -> FormData:
    """The form, or a UsageError (400) when the body is not valid multipart."""
    try:
        return await parser.parse()
    except MultiPartException as exc:
        if parser.long_name:
            raise _long_name_error() from exc
        raise UsageError(f"Cannot read the upload: {exc.message}") from exc
