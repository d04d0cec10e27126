"""Loading documents from JSONL, txt and Markdown files, folders and globs; every error case."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ragnet.corpus.loader import load_documents
from ragnet.corpus.types import Document
from ragnet.errors import InputError


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture()
def chdir_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---------------------------------------------------------------- JSONL


def test_jsonl_fields_and_defaults(tmp_path):
    path = write_jsonl(
        tmp_path / "docs.jsonl",
        [
            {"id": "d1", "title": "Paris", "text": "Paris is the capital of France."},
            {"text": "No id or title here."},
            {"id": 7, "contents": "BEIR-style contents field."},
        ],
    )
    docs = load_documents(path)
    assert [d.id for d in docs] == ["d1", "docs:2", "7"]
    assert [d.title for d in docs] == ["Paris", "", ""]
    assert docs[0].text == "Paris is the capital of France."
    assert docs[2].text == "BEIR-style contents field."
    assert docs[1].source == f"{path}:2"
    assert all(isinstance(d, Document) for d in docs)


def test_jsonl_metadata_pass_through_and_extra_keys(tmp_path):
    path = write_jsonl(
        tmp_path / "docs.jsonl",
        [{"id": "a", "text": "x y", "metadata": {"year": 2019, "tags": ["a", "b"]}, "url": "http://e.x", "n": 3}],
    )
    [doc] = load_documents(path)
    assert doc.metadata == {"year": 2019, "tags": ["a", "b"], "url": "http://e.x", "n": 3}


def test_jsonl_contents_kept_in_metadata_when_text_present(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [{"text": "main", "contents": "other"}])
    [doc] = load_documents(path)
    assert doc.text == "main"
    assert doc.metadata == {"contents": "other"}


def test_jsonl_blank_lines_skipped_line_numbers_kept(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text('\n{"text": "first"}\n   \n\n{"text": "second"}\n\n', encoding="utf-8")
    docs = load_documents(path)
    assert [d.id for d in docs] == ["docs:2", "docs:5"]


def test_jsonl_bom_and_crlf(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "text": "with BOM"}\r\n{"id": "b", "text": "crlf"}\r\n')
    docs = load_documents(path)
    assert [(d.id, d.text) for d in docs] == [("a", "with BOM"), ("b", "crlf")]


def test_jsonl_unicode_line_separator_inside_string(tmp_path):
    path = tmp_path / "u.jsonl"
    path.write_text(json.dumps({"text": "a\u2028b"}, ensure_ascii=False) + "\n", encoding="utf-8")
    [doc] = load_documents(path)
    assert doc.text == "a\u2028b"


# ---------------------------------------------------------------- JSONL errors


def test_malformed_json_names_file_line_and_column(chdir_tmp):
    Path("docs.jsonl").write_text(
        '{"text": "ok"}\n{"text": "ok too"}\n{"text": "a" "b"}\n{"text": "never read"}\n', encoding="utf-8"
    )
    with pytest.raises(InputError) as info:
        load_documents("docs.jsonl")
    assert str(info.value) == "docs.jsonl:3: invalid JSON: Expecting ',' delimiter (column 14)"
    assert info.value.path == "docs.jsonl" and info.value.line == 3


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('["a", "b"]', "expected a JSON object per line, got an array"),
        ('"just a string"', "expected a JSON object per line, got a string"),
        ('{"id": "x", "title": "t"}', "missing 'text' field (or 'contents'); keys present: id, title"),
        ('{"text": ""}', "'text' is empty"),
        ('{"text": "   \\n "}', "'text' is empty"),
        ('{"text": 42}', "'text' must be a string, got a number"),
        ('{"text": null}', "'text' must be a string, got null"),
        ('{"contents": ["a"]}', "'contents' must be a string, got an array"),
        ('{"text": "x", "title": 5}', "'title' must be a string, got a number"),
        ('{"text": "x", "id": ["a"]}', "'id' must be a string or an integer, got an array"),
        ('{"text": "x", "id": true}', "'id' must be a string or an integer, got a boolean"),
        ('{"text": "x", "id": " "}', "'id' is empty"),
        ('{"text": "x", "metadata": [1]}', "'metadata' must be an object, got an array"),
        ('{"text": "x", "year": 1, "metadata": {"year": 2}}', "key 'year' is given both"),
    ],
)
def test_bad_records_name_file_and_line(tmp_path, line, message):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "fine"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_documents(path)
    assert str(info.value).startswith(f"{path}:2: {message}")


def test_duplicate_ids_name_both_lines(tmp_path):
    records = [{"id": "a", "text": "1"}, {"id": "b", "text": "2"}, {"id": "a", "text": "3"}]
    path = write_jsonl(tmp_path / "docs.jsonl", records)
    with pytest.raises(InputError) as info:
        load_documents(path)
    assert str(info.value) == (
        f"{path}:3: duplicate document id 'a' (first defined at {path}:1); ids must be unique"
    )


def test_duplicate_ids_across_files(tmp_path):
    one = write_jsonl(tmp_path / "one.jsonl", [{"id": "x", "text": "1"}])
    two = write_jsonl(tmp_path / "two.jsonl", [{"text": "0"}, {"id": "x", "text": "2"}])
    with pytest.raises(InputError, match=r"two.jsonl:2: duplicate document id 'x' \(first defined at .*one.jsonl:1\)"):
        load_documents([one, two])


def test_int_and_string_ids_collide(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [{"id": 1, "text": "a"}, {"id": "1", "text": "b"}])
    with pytest.raises(InputError, match="duplicate document id '1'"):
        load_documents(path)


def test_binary_file_detected_by_nul_byte(tmp_path):
    path = tmp_path / "image.txt"
    path.write_bytes(b"GIF89a\x00\x01\x02\x03")
    with pytest.raises(InputError, match=r"image.txt:1: not a UTF-8 text file \(binary\?\)"):
        load_documents(path)


def test_undecodable_jsonl_names_the_line(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_bytes(b'{"text": "ok"}\n{"text": "ok"}\n{"text": "caf\xe9"}\n')
    with pytest.raises(InputError) as info:
        load_documents(path)
    assert str(info.value).startswith(f"{path}:3: not a UTF-8 text file (binary?)")


def test_other_encoding_can_be_chosen(tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes("Café in Zürich\n".encode("latin-1"))
    with pytest.raises(InputError, match="not a UTF-8 text file"):
        load_documents(path)
    [doc] = load_documents(path, encoding="latin-1")
    assert doc.text == "Café in Zürich\n"


@pytest.mark.parametrize("content", [b"", b"   \n\n\t\n", b"\xef\xbb\xbf"])
@pytest.mark.parametrize("name", ["empty.jsonl", "empty.txt", "empty.md"])
def test_empty_files(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError) as info:
        load_documents(path)
    assert str(info.value) == f"{path}: file is empty"


def test_jsonl_with_blank_lines_only_is_empty(tmp_path):
    path = tmp_path / "blank.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="file is empty"):
        load_documents(path)


# ---------------------------------------------------------------- path errors


def test_nonexistent_path(tmp_path):
    with pytest.raises(InputError) as info:
        load_documents(tmp_path / "nope.jsonl")
    assert str(info.value) == f"{tmp_path / 'nope.jsonl'}: no such file or folder"


@pytest.mark.parametrize(
    ("name", "hint"), [("slides.pptx", "'.pptx'"), ("data.json", "JSON Lines"), ("README", "no suffix")]
)
def test_unsupported_suffix(tmp_path, name, hint):
    path = tmp_path / name
    path.write_text("content", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_documents(path)
    message = str(info.value)
    assert message.startswith(f"{path}: unsupported file type")
    assert hint in message and ".jsonl" in message


def test_empty_folder(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    with pytest.raises(InputError) as info:
        load_documents(folder)
    assert str(info.value).startswith(f"{folder}: no .jsonl, .txt, .md, .markdown, .pdf, .html, .htm, .docx files in this folder")
    assert "empty" in str(info.value)


def test_folder_with_only_unsupported_files(tmp_path):
    (tmp_path / "a.pptx").write_bytes(b"PK")
    (tmp_path / "b.pptx").write_bytes(b"PK")
    (tmp_path / "c.odt").write_text("x")
    with pytest.raises(InputError, match=r"found only 1 \.odt, 2 \.pptx"):
        load_documents(tmp_path)


def test_glob_matching_nothing(tmp_path):
    pattern = str(tmp_path / "**" / "*.md")
    with pytest.raises(InputError) as info:
        load_documents(pattern)
    assert str(info.value) == f"{pattern}: no files match this pattern"


def test_glob_matching_unsupported_file_fails(tmp_path):
    (tmp_path / "a.md").write_text("# A\ntext")
    (tmp_path / "b.csv").write_text("x,y")
    with pytest.raises(InputError, match=r"b.csv: unsupported file type '.csv'"):
        load_documents(str(tmp_path / "*"))


def test_no_paths_and_bad_arguments(tmp_path):
    with pytest.raises(InputError, match="argument 'paths': no paths given"):
        load_documents([])
    with pytest.raises(InputError, match="argument 'paths'"):
        load_documents(42)
    with pytest.raises(InputError, match="argument 'paths'"):
        load_documents([tmp_path, 3])
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(InputError, match="argument 'encoding'"):
        load_documents(tmp_path, encoding="no-such-codec")
    with pytest.raises(InputError, match="argument 'glob'"):
        load_documents(tmp_path, glob="")


# ---------------------------------------------------------------- txt and Markdown


def test_markdown_title_is_first_heading(tmp_path):
    path = tmp_path / "guide.md"
    path.write_text("Intro paragraph before any heading.\n\n## Installing ragnet ##\n\nRun pip.\n", encoding="utf-8")
    [doc] = load_documents(path)
    assert doc.id == "guide.md"
    assert doc.title == "Installing ragnet"
    assert doc.text.startswith("Intro paragraph")  # the text is kept whole
    assert doc.metadata == {}
    assert doc.source == str(path)


def test_markdown_setext_heading_and_code_fence(tmp_path):
    fenced = tmp_path / "fenced.md"
    fenced.write_text("```\n# not a heading\n```\n\nReal Title\n==========\n\nBody.\n", encoding="utf-8")
    assert load_documents(fenced)[0].title == "Real Title"


def test_markdown_title_and_heading_path_agree_on_what_a_heading_is(tmp_path):
    # a rule under a paragraph's second line makes no setext heading: neither the title nor the
    # heading path takes "pip install ragnet." for one
    path = tmp_path / "notes.md"
    path.write_text("Setup notes:\npip install ragnet.\n---\n\nUsage\n=====\n\nRun it.\n", encoding="utf-8")
    [doc] = load_documents(path)
    assert doc.title == "Usage"
    assert [place["headings"] for _, place in doc.positions] == [["Usage"]]


def test_markdown_without_heading_uses_first_line_or_stem(tmp_path):
    short = tmp_path / "short.markdown"
    short.write_text("\n\n  A first line  \nmore text\n", encoding="utf-8")
    assert load_documents(short)[0].title == "A first line"
    long = tmp_path / "long-notes.md"
    long.write_text("word " * 40 + "\nsecond line\n", encoding="utf-8")
    assert load_documents(long)[0].title == "long-notes"


def test_markdown_front_matter(tmp_path):
    path = tmp_path / "post.md"
    path.write_text('---\ntitle: "Budget 2019"\nyear: 2019\nauthor: Ann\n---\n\n# Heading\n\nBody text.\n')
    [doc] = load_documents(path)
    assert doc.title == "Budget 2019"
    assert doc.metadata == {"year": 2019, "author": "Ann"}
    assert doc.text == "# Heading\n\nBody text.\n"


def test_markdown_unclosed_front_matter_is_text(tmp_path):
    path = tmp_path / "rule.md"
    path.write_text("---\nNot front matter, just a rule above a paragraph.\n")
    [doc] = load_documents(path)
    assert doc.text.startswith("---\n") and doc.metadata == {}


def test_txt_title_and_crlf(tmp_path):
    path = tmp_path / "note.txt"
    path.write_bytes(b"\xef\xbb\xbfMeeting notes\r\nWe met on Monday.\r\n")
    [doc] = load_documents(path)
    assert doc.title == "Meeting notes"
    assert doc.text == "Meeting notes\nWe met on Monday.\n"


# ---------------------------------------------------------------- folders and globs


@pytest.fixture()
def tree(tmp_path) -> Path:
    root = tmp_path / "corpus"
    (root / "b" / "deep").mkdir(parents=True)
    (root / "a").mkdir()
    (root / ".git").mkdir()
    (root / "z.txt").write_text("Zed file\nlast")
    (root / "a" / "one.md").write_text("# One\nfirst")
    (root / "b" / "two.TXT").write_text("Two\nsecond")
    (root / "b" / "deep" / "three.jsonl").write_text('{"id": "j1", "text": "json one"}\n{"text": "json two"}\n')
    (root / ".git" / "config.txt").write_text("hidden, skipped")
    (root / ".hidden.md").write_text("hidden, skipped")
    return root


def test_folder_recursive_sorted(tree):
    with pytest.warns(UserWarning) as record:
        (tree / "image.png").write_bytes(b"\x89PNG")
        docs = load_documents(tree)
    assert "skipped files with unsupported suffixes: 1 .png" in str(record[0].message)
    assert [d.id for d in docs] == ["a/one.md", "j1", "three:2", "b/two.TXT", "z.txt"]
    assert [d.title for d in docs] == ["One", "", "", "Two", "Zed file"]


def test_folder_loading_is_deterministic(tree):
    first = load_documents(tree)
    second = load_documents(str(tree))
    assert first == second


def test_glob_pattern_recursive_with_relative_ids(tree):
    docs = load_documents(str(tree / "**" / "*.md"))
    assert [(d.id, d.title) for d in docs] == [("a/one.md", "One")]
    docs = load_documents(str(tree / "b" / "**" / "*"))
    assert [d.id for d in docs] == ["j1", "three:2", "two.TXT"]


def test_relative_glob(chdir_tmp):
    Path("docs/sub").mkdir(parents=True)
    Path("docs/sub/x.md").write_text("# X\nbody")
    Path("docs/y.txt").write_text("Y\nbody")
    docs = load_documents("docs/**/*.*")
    assert [d.id for d in docs] == ["sub/x.md", "y.txt"]
    assert docs[0].source == os.path.join("docs", "sub", "x.md")


def test_folder_glob_keyword(tree):
    docs = load_documents(tree, glob="**/*.jsonl")
    assert [d.id for d in docs] == ["j1", "three:2"]
    with pytest.raises(InputError, match=r"no files match '\*\*/\*.rst' in this folder"):
        load_documents(tree, glob="**/*.rst")


def test_mixed_list_and_same_file_once(tree, tmp_path):
    extra = write_jsonl(tmp_path / "extra.jsonl", [{"id": "e", "text": "extra"}])
    docs = load_documents([str(extra), tree, tree / "z.txt"])
    assert [d.id for d in docs] == ["e", "a/one.md", "j1", "three:2", "b/two.TXT", "z.txt"]


def test_same_relative_name_in_two_folders_is_a_duplicate(tmp_path):
    for name in ("x", "y"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "readme.md").write_text(f"# {name}\ntext")
    with pytest.raises(InputError, match="duplicate document id 'readme.md'"):
        load_documents([tmp_path / "x", tmp_path / "y"])


def test_error_inside_folder_names_the_file(tree):
    bad = tree / "b" / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"title": "no text"}\n')
    with pytest.raises(InputError) as info:
        load_documents(tree)
    assert str(info.value).startswith(f"{bad}:2: missing 'text'")


def test_every_bad_file_of_a_folder_is_reported_at_once(tmp_path):
    from ragnet.corpus.loader import load_documents
    from ragnet.errors import InputError

    (tmp_path / "a.txt").write_text("fine text")
    (tmp_path / "b.txt").write_text("")
    (tmp_path / "c.jsonl").write_text('{"id": "x", "text": "ok"}\n{not json\n')
    (tmp_path / "d.md").write_bytes(b"\x00\x01\x02binary")
    with pytest.raises(InputError) as err:
        load_documents(tmp_path)
    message = str(err.value)
    assert message.startswith("argument 'paths': 3 problems in the input; nothing was indexed")
    assert "b.txt" in message and "c.jsonl:2" in message and "d.md" in message


def test_files_over_the_size_limit_are_refused_with_the_fix(tmp_path):
    from ragnet.corpus.loader import load_documents
    from ragnet.errors import InputError

    big = tmp_path / "big.txt"
    big.write_text("word " * 300_000)  # 1.5 MB
    with pytest.raises(InputError, match=r"big.txt: file is 1.5 MB, over the 1 MB limit; .*--max-file-mb"):
        load_documents(big, max_file_mb=1)
    assert len(load_documents(big, max_file_mb=2)) == 1
    with pytest.raises(InputError, match="max_file_mb"):
        load_documents(big, max_file_mb=0)


# ---------------------------------------------------------------- issue 74: folders and links


def test_an_unreadable_subfolder_is_a_problem_naming_it_never_silence(tmp_path, monkeypatch):
    """os.walk dropped a folder it could not list without a word (its files simply missing)."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.md").write_text("# A\n\nFirst.\n")
    (tmp_path / "sub" / "b.md").write_text("# B\n\nSecond.\n")
    real = os.scandir

    def scandir(path=".", *args):  # tests run as root, whom chmod 000 does not stop
        if not isinstance(path, int) and Path(os.fsdecode(path)) == tmp_path / "sub":
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real(path, *args)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(InputError) as err:
        load_documents(tmp_path)
    assert str(err.value) == (f"{tmp_path}/sub: cannot read folder (Permission denied), so its files cannot be "
                              "listed; make it readable, or give --on-error skip to leave it out")
    with pytest.warns(UserWarning, match=r"skipped 1 file:\n  cannot read folder: .*/sub"):
        assert [d.id for d in load_documents(tmp_path, on_error="skip")] == ["a.md"]


def test_links_leading_outside_the_folder_are_refused_unless_followed(tmp_path):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# A\n\nInside.\n")
    (tmp_path / "outside.md").write_text("# Out\n\nOutside.\n")
    (docs / "sub" / "out.md").symlink_to(tmp_path / "outside.md")
    (docs / "sub" / "in.md").symlink_to(docs / "a.md")  # inside: read as before (once)
    for paths, options in [(docs, {}), (f"{docs}/**/*.md", {}), (docs, {"glob": "**/*.md"})]:
        with pytest.raises(InputError, match=r"out.md: symbolic link to .*outside.md, outside the folder; "):
            load_documents(paths, **options)
    assert [d.id for d in load_documents(docs, follow_links=True)] == ["a.md", "sub/out.md"]
    assert [d.id for d in load_documents(docs / "sub" / "out.md")] == ["out.md"]  # named itself: read
