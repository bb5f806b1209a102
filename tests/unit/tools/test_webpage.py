"""A fetched page as the model reads it: Markdown with the page's title first, code blocks whole with their
indentation and language, links with absolute addresses, headings, lists and tables with their markers, and none
of the scripts, styles, navigation or inline images' data; cut at the size limit as before."""

from __future__ import annotations

from coder_agent.tools.webpage import _page, html_to_markdown

DOCS = """<!DOCTYPE html><html><head><title> asyncio.TaskGroup —
 Python docs </title><style>body{color:red}</style><script>var secret = "<p>not text</p>";</script></head>
<body><nav><a href="/">Home</a> » <a href="/library/">Library</a></nav>
<div role="navigation">Previous topic</div>
<h1>Task Groups<a class="headerlink" href="#task-groups">¶</a></h1>
<p>Combine <em>tasks</em> with <strong>care</strong>; see
<a href="asyncio-task.html#create_task"><code>create_task()</code></a>
and <a href="https://peps.python.org/pep-0654/">PEP 654</a>.
<img src="data:image/png;base64,iVBORw0KGgo=" alt="diagram"></p>
<div class="highlight-python3"><div class="highlight"><pre><span class="k">async</span> def main():
    <span class="k">async</span> <span class="k">with</span> TaskGroup() <span class="k">as</span> tg:
        tg.create_task(work())
</pre></div></div>
<pre><code class="language-sh">pip install \\
    anyio</code></pre>
<h2>Notes</h2>
<ul><li>First</li><li>Second<ol><li>inner one</li><li>inner two</li></ol></li></ul>
<table><tr><th>Method</th><th>Meaning</th></tr><tr><td>create_task()</td><td>Start a task</td></tr></table>
<form><input name="q"><button>Search</button></form>
</body></html>"""
URL = "https://docs.example.org/3/library/asyncio-taskgroup.html"


def test_a_docs_page_becomes_markdown() -> None:
    text = html_to_markdown(DOCS, URL)
    assert text.startswith("Title: asyncio.TaskGroup — Python docs\n\n# Task Groups\n")
    assert "*tasks*" in text and "**care**" in text
    assert "[`create_task()`](https://docs.example.org/3/library/asyncio-task.html#create_task)" in text
    assert "[PEP 654](https://peps.python.org/pep-0654/)" in text
    assert (
        "```python3\nasync def main():\n    async with TaskGroup() as tg:\n        tg.create_task(work())\n```" in text
    )
    assert "```sh\npip install \\\n    anyio\n```" in text
    assert "## Notes\n\n- First\n- Second\n  1. inner one\n  2. inner two" in text
    assert "| Method | Meaning |\n| --- | --- |\n| create\\_task() | Start a task |" in text  # Markdown's own escape
    for gone in ("body{color:red}", "not text", "Home", "Previous topic", "Search", "¶", "base64", "\n\n\n"):
        assert gone not in text, gone


def test_a_page_is_cut_at_the_limit_after_conversion() -> None:
    body = ("<p>" + "word " * 30 + "</p>") * 200
    page = _page(URL, 200, {"content-type": "text/html"}, f"<html><body>{body}</body></html>".encode(), 1000)
    assert page.text.startswith("word word")
    assert len(page.text) < 1100 and "[… truncated: the page has" in page.text


def test_text_that_is_not_html_is_left_as_it_is() -> None:
    page = _page(URL, 200, {"content-type": "text/plain"}, b"<b>not html</b>\n  indented", 1000)
    assert page.text == "<b>not html</b>\n  indented"


def test_a_page_whose_scripts_come_first_still_shows_its_text() -> None:
    """Only the start of a big page is converted, counted after its scripts are gone (they can be megabytes)."""
    script = "<script>" + "var x = 1;\n" * 200_000 + "</script>"
    page = _page(URL, 200, {"content-type": "text/html"}, f"<html><head>{script}</head><body><h1>Hi</h1>".encode(), 100)
    assert page.text == "# Hi"
