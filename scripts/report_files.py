"""Report files written whole: the scripts' Markdown and JSON summaries go to a temporary file beside
each path and are then put in place, so that a full disk or an error halfway never leaves a cut-off
report where a reader (or the next step of a check) expects a whole one."""

import os
from pathlib import Path


def write_whole(reports):
    """Writes each (path, text) to a temporary file beside it, then puts them in place: each path holds
    its old contents or the whole new text, never a cut-off one, and an error while writing leaves
    every path as it was. No temporary file stays."""
    written = []
    try:
        for path, text in reports:
            path = Path(path)
            temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            written.append((temporary, path))
            temporary.write_text(text, encoding="utf-8")
        for temporary, path in written:
            os.replace(temporary, path)
    finally:
        for temporary, _ in written:
            temporary.unlink(missing_ok=True)
