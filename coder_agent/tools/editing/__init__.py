"""Edits of a file's text, in memory: the mechanisms behind edit_file and apply_patch.

* `apply`: `Edit`, `EditError` and `apply_edits`, the matching rules (exact, without pasted line-number prefixes,
  whitespace-tolerant when unique) and line endings, all or nothing;
* `diagnostics`: the "did you mean" of an edit that matched nowhere (the closest regions, with line numbers);
* `lines`: whole-line matching up to whitespace (line endings, trailing spaces, indentation carried over), the
  fallback of both tools;
* `patch`: the apply_patch format parsed into file operations; `hunks`: a patch's hunks applied to one text;
  `patch_plan`: a whole patch applied to a view of the files, before anything is written;
* `result`: `EditResult` (the new text, per edit the line ranges where its replacements landed, the model's message
  with a numbered snippet), `EditOutcome`, `LineRange`, `make_snippet`.

The text is the file's exact decoded content (`file_view.decode_text`), never a text read with newline translation.
Line numbers count "\\n" exactly as `file_view.split_lines` does, so they match read_file's.
"""

from coder_agent.tools.editing.apply import Edit, EditError, apply_edits
from coder_agent.tools.editing.result import SNIPPET_CONTEXT, EditOutcome, EditResult, LineRange, make_snippet

__all__ = [
    "SNIPPET_CONTEXT",
    "Edit",
    "EditError",
    "EditOutcome",
    "EditResult",
    "LineRange",
    "apply_edits",
    "make_snippet",
]
