"""Study (2026-12-07): the dev set's manuals as plain text, with and without their sections.

A team's manuals are often plain text (``makeinfo --plaintext``, specifications, RFCs), where
nothing but a numbered line marks a section. This writes the six GNU info manuals of the
real-document dev set (sed, diffutils, wget, find, bc, grep) as ``.txt`` files laid out as
``makeinfo --plaintext`` lays them out, and the dev questions over them (61) with their gold
places moved to those files (the file and the quote; a text has no pages), so ``ragnet eval
--docs`` measures the same questions over plain text:

    python -m benchmarks.studies.plain_text_manuals            # -> ~/.cache/ragnet/realdocs-txt
    RAGNET_LM_THREADS=1 taskset -c 0 ragnet eval --docs ~/.cache/ragnet/realdocs-txt \\
        --data ~/.cache/ragnet/realdocs-txt-questions.jsonl -n 61 --strategies auto --no-judge \\
        --lm local --answer-lm local:qwen2.5-coder-1.5b --no-plots --out OUT

Run at a commit before plain texts had sections and at one after; the results page has both.

``--man-pages`` writes the dev set's four man pages instead, as ``man ssh > ssh.txt`` saves them
(rendered 80 columns wide: unnumbered, indented sections and a running head and foot), with
their 16 questions, into ``~/.cache/ragnet/realdocs-man-txt``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from benchmarks.studies import parser

#: The dev set's documents made from GNU info manuals, and the plain-text files they become.
MANUALS = {"gnu/sed.pdf": "sed", "gnu/diffutils.pdf": "diffutils", "gnu/wget.pdf": "wget",
           "gnu/find.pdf": "find", "gnu/bc.pdf": "bc", "gnu/grep.docx": "grep"}
#: The dev set's man pages (Markdown there), and the plain-text files ``man`` renders them into.
MAN_PAGES = {"man/ssh.md": "man/ssh.txt", "man/tar.md": "man/tar.txt", "man/less.md": "man/less.txt",
             "man/journalctl.md": "man/journalctl.txt"}


def text_questions(questions: Sequence[dict], files: dict[str, str] | None = None) -> list[dict]:
    """The questions whose every gold place is in one of ``files`` (source file: text file;
    :data:`MANUALS`' by default), their places moved to the ``.txt`` file (file and quote kept,
    page and section dropped).

    Example:
        >>> q = {"id": "q", "question": "?", "answers": ["1"],
        ...      "gold": [{"file": "gnu/sed.pdf", "page": 4, "quote": "It is 1."}]}
        >>> text_questions([q, {**q, "gold": [{"file": "pdf/libtasn1.pdf", "page": 2}]}])[0]["gold"]
        [{'file': 'gnu/sed.txt', 'quote': 'It is 1.', 'role': 'answer'}]
    """
    files = files or {source: f"gnu/{name}.txt" for source, name in MANUALS.items()}
    out = []
    for q in questions:
        gold = q.get("gold") or []
        if not gold or any(place["file"] not in files for place in gold):
            continue
        places = [{"file": files[p["file"]], "quote": p.get("quote"), "role": p.get("role", "answer")} for p in gold]
        out.append({**q, "gold": [{k: v for k, v in p.items() if v is not None} for p in places]})
    return out


def main(argv: Sequence[str] | None = None) -> None:
    from benchmarks.realdocs import info, writers
    from benchmarks.realdocs.check import QUESTIONS, load_questions
    from benchmarks.realdocs.build import INFO
    from ragnet._atomic import write_text

    p = parser(__doc__, "python -m benchmarks.studies.plain_text_manuals")
    p.add_argument("--out", type=Path, default=None,
                   help="The folder of .txt manuals (the questions file is written beside it; "
                        "default ~/.cache/ragnet/realdocs-txt, or realdocs-man-txt with --man-pages).")
    p.add_argument("--man-pages", action="store_true", help="Write the four man pages instead of the GNU manuals.")
    args = p.parse_args(argv)
    home = Path.home() / ".cache" / "ragnet"
    if args.man_pages:
        from benchmarks.realdocs.manpages import render_man

        args.out = args.out or home / "realdocs-man-txt"
        for target in MAN_PAGES.values():
            (args.out / target).parent.mkdir(parents=True, exist_ok=True)
            write_text(args.out / target, render_man(Path(target).stem))
        questions = text_questions(load_questions(QUESTIONS), MAN_PAGES)
    else:
        args.out = args.out or home / "realdocs-txt"
        for name in MANUALS.values():
            data = writers.write_text(info.read_manual(INFO / f"{name}.info.gz"))
            (args.out / "gnu").mkdir(parents=True, exist_ok=True)
            write_text(args.out / "gnu" / f"{name}.txt", data.decode("utf-8"))
        questions = text_questions(load_questions(QUESTIONS))
    target = args.out.with_name(args.out.name + "-questions.jsonl")
    write_text(target, "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions))
    files = len(MAN_PAGES if args.man_pages else MANUALS)
    print(f"{files} files -> {args.out}; {len(questions)} questions -> {target}")


if __name__ == "__main__":
    main()
