"""The "did you mean" of a failed edit: the regions of the file closest to an old_string that matched nowhere.

`not_found_message` is the model's text when an edit found no place, even whitespace-tolerantly: up to three
closest regions (difflib ratio over stripped lines, with their line numbers, a shortlist by shared tokens first for
long strings so that the cost stays linear in the file), or a request to read the file again, and a note when
new_string is already in the file (the edit may have been applied before). Texts over 50,000 lines are not searched.
"""

from __future__ import annotations

import difflib
import heapq
import re

from coder_agent.tools.file_view import number_line

__all__ = ["closest_regions", "not_found_message", "span_text"]

_CANDIDATES = 3
_CANDIDATE_MIN_RATIO = 0.5
_CANDIDATE_SHOWN_LINES = 12
_CANDIDATE_MAX_TEXT_LINES = 50_000  # beyond this many lines the "did you mean" search is skipped (it is O(lines))


def not_found_message(work: str, lines: list[str], old: str, old_lines: list[str], new: str, stripped: bool) -> str:
    """The model's text for an edit whose old_string matched nowhere in `work` (whose lines are `lines`)."""
    parts = [
        "old_string did not appear verbatim in the file, nor when ignoring differences of indentation, trailing "
        "whitespace and line endings."
        + (" (Line-number prefixes were removed from old_string before matching.)" if stripped else "")
    ]
    candidates = closest_regions(lines, old_lines)
    if candidates:
        for rank, (ratio, index) in enumerate(candidates):
            first, last = index + 1, index + len(old_lines)
            lead = "Did you mean" if rank == 0 else "Or"
            shown = [number_line(n, lines[n - 1].rstrip("\r"), 300) for n in range(first, last + 1)]
            if len(shown) > _CANDIDATE_SHOWN_LINES:
                hidden = len(shown) - _CANDIDATE_SHOWN_LINES
                shown = [*shown[:_CANDIDATE_SHOWN_LINES], f"[… {hidden} more lines …]"]
            parts.append(f"{lead} {span_text(first, last)} ({ratio:.0%} similar):\n" + "\n".join(shown))
        parts.append(
            "Copy old_string exactly from the file as it is now (the text after the line-number prefix and its tab), "
            "or read the file again if it may have changed since you last read it."
        )
    else:
        parts.append("No similar region was found. Read the file again to see its current content, then retry.")
    probe = new.strip()
    if len(probe) >= 6 and probe in work and probe not in old:  # shorter ones are found by chance
        line = work.count("\n", 0, work.find(probe)) + 1
        parts.append(
            f"Note: new_string already appears in the file (at line {line}); this edit may already have been "
            "applied. Check before retrying."
        )
    return "\n".join(parts)


def closest_regions(lines: list[str], old_lines: list[str]) -> list[tuple[float, int]]:
    """Up to 3 non-overlapping windows of len(old_lines) lines most similar to old (difflib ratio, stripped lines).

    One-line strings are compared with every line (difflib's quick ratios prune most). Longer ones first shortlist
    windows by the overlap of their tokens with old's (a sliding count, linear in the text), then rank those.
    """
    if not lines or len(lines) > _CANDIDATE_MAX_TEXT_LINES:
        return []
    size = min(max(len(old_lines), 1), len(lines))
    target = "\n".join(line.strip() for line in old_lines)
    if not target.strip():
        return []
    stripped = [line.strip() for line in lines]
    starts = range(len(lines) - size + 1) if size == 1 else _token_shortlist(stripped, old_lines, size)
    by_line = size > 30  # long blocks: compare lists of lines, far cheaper than characters
    matcher: difflib.SequenceMatcher[str] = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2([line.strip() for line in old_lines] if by_line else target)
    best: list[tuple[float, int]] = []  # min-heap of (ratio, -index), the best few windows
    keep = _CANDIDATES * 4
    for i in starts:
        matcher.set_seq1(stripped[i : i + size] if by_line else "\n".join(stripped[i : i + size]))
        floor = best[0][0] if len(best) >= keep else _CANDIDATE_MIN_RATIO
        if matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor:
            continue
        ratio = matcher.ratio()
        if ratio < floor:
            continue
        if len(best) < keep:
            heapq.heappush(best, (ratio, -i))
        else:
            heapq.heapreplace(best, (ratio, -i))
    chosen: list[tuple[float, int]] = []
    for ratio, neg_index in sorted(best, reverse=True):
        index = -neg_index
        if all(abs(index - other) >= size for _, other in chosen):
            chosen.append((ratio, index))
        if len(chosen) == _CANDIDATES:
            break
    return chosen


_TOKEN = re.compile(r"\w+|[^\w\s]")


def _token_shortlist(stripped: list[str], old_lines: list[str], size: int, keep: int = 12) -> list[int]:
    """Starts of the `keep` windows of `size` lines sharing the most tokens with old_lines (Dice coefficient),
    at most one per `size` lines, so that several distinct regions survive."""
    wanted: dict[str, int] = {}
    for line in old_lines:
        for token in _TOKEN.findall(line):
            wanted[token] = wanted.get(token, 0) + 1
    wanted_total = sum(wanted.values())
    tokens = [_TOKEN.findall(line) for line in stripped]
    window: dict[str, int] = {}
    shared = 0
    window_total = 0

    def add(line_tokens: list[str], step: int) -> None:
        nonlocal shared, window_total
        window_total += step * len(line_tokens)
        for token in line_tokens:
            limit = wanted.get(token)
            if limit is None:
                continue
            count = window.get(token, 0)
            if step > 0:
                shared += count < limit
                window[token] = count + 1
            else:
                window[token] = count - 1
                shared -= count - 1 < limit

    scored: list[tuple[float, int]] = []
    for i, line_tokens in enumerate(tokens):
        add(line_tokens, 1)
        if i >= size:
            add(tokens[i - size], -1)
        if i >= size - 1:
            total = wanted_total + window_total
            scored.append((2 * shared / total if total else 0.0, i - size + 1))
    scored.sort(reverse=True)
    picked: list[int] = []
    for _, start in scored:
        if all(abs(start - other) >= size for other in picked):
            picked.append(start)
            if len(picked) == keep:
                break
    return picked


def span_text(first: int, last: int) -> str:
    """Lines `first`..`last` in words: "line 3" or "lines 3-5"."""
    return f"line {first}" if first == last else f"lines {first}-{last}"
