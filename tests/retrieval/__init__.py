import re

_PLACE = re.compile(r"(\.md)#L\d+(?:-L\d+)?\)")


def unplaced(text: str) -> str:
    """An answer with its citations' line places taken out ("x.md#L12-L14)" -> "x.md)"),
    for tests of what the answer says rather than where it points (tests/retrieval/
    test_places.py tests the places)."""
    return _PLACE.sub(r"\1)", text)
