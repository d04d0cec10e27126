"""Build the real-document dev set's folder: a team's manuals folder, from documentation installed here.

    python -m benchmarks.realdocs.build [--out DIR]

The folder (default ``$RAGNET_HOME/realdocs-dev``, ``RAGNET_HOME`` defaulting to
``~/.cache/ragnet``) holds:

* ``pdf/``: real PDF manuals, copied as they are: libtasn1 and the shared MIME-info spec, and those of
  Debian documentation packages listed in ``packaged/*.json`` (installed with ``apt-get`` when missing);
* ``gnu/``: GNU info manuals turned into documents: ``sed.pdf``, ``diffutils.pdf`` and
  ``wget.pdf`` with an outline (bookmarks), ``find.pdf`` and ``bc.pdf`` without one (their
  numbered headings are only in the text), ``grep.docx`` with ``Heading`` styles;
* ``html/``: the ninja manual, the libffi manual (one page per section), three Node.js API pages
  and libxslt's xsltproc page, copied as they are;
* ``man/``: man pages (tar, ssh, less, journalctl) as Markdown.

The build is deterministic (the same sources and generator versions give the same bytes) and
atomic (written to a temporary folder beside the target, then renamed into place). ``.build.json``
records every source with its sha256 and the generators' versions: the page numbers of the
generated PDFs depend on fpdf2's layout. It is a hidden file, so ragnet does not index it.

The acceptance set's manuals (the other PDFs under ``/usr/share/doc`` and anything duplicating
them) are never read here.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable

__all__ = ["SOURCES", "build", "default_out", "install_packages", "missing_sources"]

DOC = Path("/usr/share/doc")
INFO = Path("/usr/share/info")
MANIFEST = ".build.json"
_PAGE_CHARS = 3000  # characters of text counted as one page for HTML, DOCX and Markdown


@dataclass(frozen=True)
class Source:
    """One document of the folder: where it is written and what it is made from.

    Attributes:
        out: the path in the folder.
        kind: ``copy``, ``pdf`` (info manual with outline), ``pdf-flat`` (without outline),
            ``docx`` (info manual) or ``man`` (man page as Markdown).
        src: the source file, or the man page's name for ``man``; a ``.gz`` file is unpacked.
        package: the Debian package that installs ``src`` when it is not installed by default.
        producer: for a real PDF, the toolchain that made it (``LaTeX``, ``Texinfo``, ``DocBook``, ``Sphinx``, ...).
    """

    out: str
    kind: str
    src: str
    package: str | None = None
    producer: str | None = None


PACKAGED = Path(__file__).with_name("packaged")


def _packaged_pdfs() -> list[Source]:
    """Real PDF manuals from Debian documentation packages, listed by producer in ``packaged/*.json``.

    Each file is a JSON list of ``{"out": "pdf/NAME.pdf", "src": "/usr/share/doc/...", "package": "...",
    "producer": "..."}``.
    """
    sources = []
    for listing in sorted(PACKAGED.glob("*.json")):
        for entry in json.loads(listing.read_text(encoding="utf-8")):
            sources.append(Source(entry["out"], "copy", entry["src"], entry["package"], entry.get("producer")))
    return sources


_LIBFFI = ["index", "Introduction", "Using-libffi", "The-Basics", "Simple-Example", "Types", "Primitive-Types",
           "Structures", "Size-and-Alignment", "Arrays-Unions-Enums", "Type-Example", "Complex",
           "Complex-Type-Example", "Multiple-ABIs", "The-Closure-API", "Closure-Example", "Thread-Safety",
           "Memory-Usage", "Missing-Features", "Index"]

#: Every document of the folder, in build order.
SOURCES: tuple[Source, ...] = (
    Source("pdf/libtasn1.pdf", "copy", str(DOC / "libtasn1-doc/libtasn1.pdf"), producer="Texinfo"),
    Source("pdf/shared-mime-info-spec.pdf", "copy", str(DOC / "shared-mime-info/shared-mime-info-spec.pdf"),
           producer="DocBook"),
    Source("gnu/sed.pdf", "pdf", str(INFO / "sed.info.gz")),
    Source("gnu/diffutils.pdf", "pdf", str(INFO / "diffutils.info.gz")),
    Source("gnu/wget.pdf", "pdf", str(INFO / "wget.info.gz")),
    Source("gnu/find.pdf", "pdf-flat", str(INFO / "find.info.gz")),
    Source("gnu/bc.pdf", "pdf-flat", str(INFO / "bc.info.gz")),
    Source("gnu/grep.docx", "docx", str(INFO / "grep.info.gz")),
    Source("html/ninja/manual.html", "copy", str(DOC / "ninja-build/manual.html")),
    *(Source(f"html/libffi/{name}.html", "copy", str(DOC / f"libffi8/html/{name}.html")) for name in _LIBFFI),
    Source("html/nodejs/path.html", "copy", str(DOC / "nodejs/api/path.html")),
    Source("html/nodejs/timers.html", "copy", str(DOC / "nodejs/api/timers.html")),
    Source("html/nodejs/readline.html", "copy", str(DOC / "nodejs/api/readline.html")),
    Source("html/libxslt/xsltproc.html", "copy", str(DOC / "libxslt1-dev/html/xsltproc.html")),
    Source("man/tar.md", "man", "tar"),
    Source("man/ssh.md", "man", "ssh"),
    Source("man/less.md", "man", "less"),
    Source("man/journalctl.md", "man", "journalctl"),
    *_packaged_pdfs(),
)


def default_out() -> Path:
    """``$RAGNET_HOME/realdocs-dev`` (``RAGNET_HOME`` defaults to ``~/.cache/ragnet``)."""
    home = os.environ.get("RAGNET_HOME") or str(Path.home() / ".cache" / "ragnet")
    return Path(home).expanduser() / "realdocs-dev"


def _source_path(source: Source) -> Path:
    if source.kind == "man":
        from benchmarks.realdocs.manpages import man_source

        return man_source(source.src)
    return Path(source.src)


def _source_files(source: Source) -> list[Path]:
    """Every file a document is made from (a split info manual has several)."""
    if source.kind in ("pdf", "pdf-flat", "docx"):
        from benchmarks.realdocs.info import source_files

        return source_files(Path(source.src))
    return [_source_path(source)]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def install_packages(sources: tuple[Source, ...] = SOURCES, log: Callable[[str], None] = print) -> None:
    """``apt-get install`` the documentation packages whose files this machine lacks (as root; else a no-op)."""
    wanted = sorted({s.package for s in sources if s.package and not Path(s.src).is_file()})
    if not wanted or os.geteuid() != 0 or not shutil.which("apt-get"):
        return
    log(f"installing {', '.join(wanted)} (apt-get)")
    command = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *wanted]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if subprocess.run(command, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True)
        subprocess.run(command, env=env, capture_output=True)


def missing_sources() -> list[str]:
    """The sources this machine lacks (empty when the folder can be built)."""
    missing = []
    for source in SOURCES:
        try:
            if not _source_path(source).is_file():
                missing.append(f"{source.src} (apt-get install {source.package})" if source.package else source.src)
        except Exception:  # man -w fails: no such page, or no man at all
            missing.append(source.src)
    return missing


def _make(source: Source) -> tuple[bytes, int | None]:
    """The document's bytes and, for a PDF, its page count."""
    from benchmarks.realdocs import info, manpages, writers

    if source.kind == "copy":
        data = Path(source.src).read_bytes()
        if source.src.endswith(".gz"):
            data = gzip.decompress(data)
        return data, writers.page_count(data) if source.out.endswith(".pdf") else None
    if source.kind in ("pdf", "pdf-flat"):
        return writers.write_pdf(info.read_manual(Path(source.src)), outline=source.kind == "pdf")
    if source.kind == "docx":
        return writers.write_docx(info.read_manual(Path(source.src))), None
    if source.kind == "man":
        return manpages.man_to_markdown(manpages.render_man(source.src)).encode("utf-8"), None
    raise ValueError(f"unknown source kind {source.kind!r}")


def _text_chars(path: Path) -> int:
    """Characters of text ragnet reads from a non-PDF file (its page-equivalents' basis)."""
    import ragnet

    return sum(len(doc.text) for doc in ragnet.load_documents(path))


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for package in ("fpdf2", "python-docx", "pypdf"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "missing"
    try:
        from benchmarks.realdocs.manpages import man_version

        out["man"] = man_version()
    except Exception:
        pass
    return out


def build(out: Path, log: Callable[[str], None] = print) -> dict:
    """Build the folder at ``out``, replacing any folder already there.

    Args:
        out: the folder to write.
        log: called with one line per document written.

    Returns:
        The manifest written to ``out/.build.json``: sources, sizes, pages, versions.

    Raises:
        FileNotFoundError: a source is missing on this machine.
    """
    install_packages(log=log)
    missing = missing_sources()
    if missing:
        raise FileNotFoundError(f"missing sources: {', '.join(missing)}")
    out = Path(out).expanduser().resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    tmp.chmod(0o755)
    try:
        files = []
        for source in SOURCES:
            data, pages = _make(source)
            target = tmp / source.out
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            if pages is None:
                pages = round(_text_chars(target) / _PAGE_CHARS, 1)
                unit = "page-equivalents"
            else:
                unit = "pages"
            sources = [{"path": str(path), "sha256": _sha256(path.read_bytes())} for path in _source_files(source)]
            files.append({"file": source.out, "kind": source.kind, "sources": sources, "sha256": _sha256(data),
                          "bytes": len(data), unit: pages})
            log(f"{source.out:40s} {len(data):>9,d} bytes  {pages:>6} {unit}")
        manifest = {"generators": _versions(), "page_chars": _PAGE_CHARS, "files": files,
                    "pages": round(sum(f.get("pages", 0) + f.get("page-equivalents", 0) for f in files), 1)}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        _replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    seconds = time.perf_counter() - started
    log(f"{len(files)} files, {manifest['pages']} pages (PDF pages + {_PAGE_CHARS}-character page-equivalents), "
        f"{sum(f['bytes'] for f in files) / 1e6:.1f} MB, in {seconds:.1f} s -> {out}")
    return manifest


def _replace(tmp: Path, out: Path) -> None:
    """Rename ``tmp`` to ``out``; an old ``out`` is moved aside first and removed after."""
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
    tmp.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.realdocs.build [--out DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.realdocs.build", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None, help=f"folder to write (default {default_out()})")
    args = parser.parse_args(argv)
    try:
        build(args.out or default_out())
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
