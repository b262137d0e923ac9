"""Documents: PDF, Word, slides, spreadsheets, e-mail, web pages, notebooks and archives,
converted to Markdown with page, slide and sheet markers, and split by their own
structure for extraction. Converters are imported on first use (they are heavy)."""

from compiler.documents.archive import (
    ArchiveLimits,
    archive_members,
    compiled_member,
    list_members,
    read_member,
)
from compiler.documents.convert import ConvertOptions, convert_document, convert_options
from compiler.documents.document import Document
from compiler.documents.fetch import Fetched, FetchPolicy, fetch_policy, fetch_url, is_url
from compiler.documents.formats import (
    DOCUMENT_EXTENSIONS,
    format_of,
    supported_summary,
    supported_types,
    wanted_in_folder,
)
from compiler.documents.isolation import ConverterCrashError, ConvertProcess, convert_process
from compiler.documents.markers import span
from compiler.documents.prepare import Prepared, prepare_document
from compiler.documents.sections import split_sections

__all__ = [
    "DOCUMENT_EXTENSIONS",
    "ArchiveLimits",
    "archive_members",
    "compiled_member",
    "ConvertOptions",
    "ConvertProcess",
    "ConverterCrashError",
    "Document",
    "FetchPolicy",
    "Fetched",
    "convert_document",
    "convert_options",
    "convert_process",
    "fetch_policy",
    "fetch_url",
    "is_url",
    "Prepared",
    "prepare_document",
    "format_of",
    "list_members",
    "read_member",
    "span",
    "split_sections",
    "supported_summary",
    "supported_types",
    "wanted_in_folder",
]
