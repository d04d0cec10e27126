"""Shared fixtures: a small corpus written by the test and one index built with the real
bundled embedder (built once per test session)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ragnet.corpus.types import Document

_FACTS = [
    ("Paris", "Paris is the capital of France and sits on the Seine river. The Eiffel Tower opened in 1889."),
    ("Berlin", "Berlin is the capital of Germany. The Berlin Wall fell in 1989 after decades of division."),
    ("Rome", "Rome is the capital of Italy. The Colosseum hosted gladiator fights in the Roman Empire."),
    ("Madrid", "Madrid is the capital of Spain and home to the Prado museum of fine art."),
    ("Tokyo", "Tokyo is the capital of Japan and one of the largest metropolitan areas on Earth."),
    ("Cairo", "Cairo is the capital of Egypt, near the pyramids of Giza built for pharaohs."),
    ("Ottawa", "Ottawa is the capital of Canada, on the Ottawa River in the province of Ontario."),
    ("Canberra", "Canberra is the capital of Australia, a planned city chosen as a compromise in 1908."),
    ("Photosynthesis", "Photosynthesis converts sunlight, water and carbon dioxide into glucose and oxygen in plants."),
    ("Mitochondria", "Mitochondria are organelles that produce ATP, the energy currency of the cell."),
    ("DNA", "DNA is a double helix molecule that stores genetic information in sequences of bases."),
    ("Gravity", "Gravity is the force by which masses attract; Newton described it and Einstein refined it."),
    ("Volcano", "A volcano erupts when molten magma rises through the crust and escapes as lava and ash."),
    ("Honeybee", "Honeybees pollinate flowers and make honey from nectar inside wax combs of the hive."),
    ("Penguin", "Penguins are flightless seabirds of the Southern Hemisphere that swim to catch fish."),
    ("Elephant", "Elephants are the largest land animals, with long trunks and ivory tusks."),
    ("Chess", "Chess is a strategy board game for two players on a checkered board of 64 squares."),
    ("Football", "Association football is played by two teams of eleven players who kick a ball into goals."),
    ("Piano", "The piano is a keyboard instrument whose hammers strike strings when keys are pressed."),
    ("Violin", "The violin is a bowed string instrument with four strings tuned in perfect fifths."),
    ("Python language", "Python is a programming language known for readable syntax and a large standard library."),
    ("Rust language", "Rust is a systems programming language that guarantees memory safety without garbage collection."),
    ("Coffee", "Coffee is brewed from roasted beans of the Coffea plant and contains caffeine."),
    ("Tea", "Tea is an aromatic beverage prepared by pouring hot water over cured leaves of Camellia sinensis."),
    ("Mount Everest", "Mount Everest is Earth's highest mountain above sea level, in the Himalayas on the Nepal border."),
    ("Amazon River", "The Amazon River in South America carries more water than any other river in the world."),
    ("Sahara", "The Sahara is the largest hot desert in the world, covering much of North Africa."),
    ("Moon landing", "Apollo 11 landed the first humans on the Moon in July 1969; Neil Armstrong stepped out first."),
    ("Printing press", "Johannes Gutenberg introduced the movable-type printing press in Europe around 1440."),
    ("Penicillin", "Alexander Fleming discovered penicillin in 1928, the first widely used antibiotic."),
]


def make_docs() -> list[Document]:
    """The 30-document test corpus (one short document per topic)."""
    return [Document(id=f"doc{i:02d}", title=title, text=text) for i, (title, text) in enumerate(_FACTS)]


QUERIES = [
    "What is the capital of Japan?",
    "Which organelle produces energy for the cell?",
    "who discovered penicillin",
    "a string instrument played with a bow",
    "largest desert in Africa",
    "memory safe systems programming",
]


@pytest.fixture(scope="session")
def docs() -> list[Document]:
    return make_docs()


@pytest.fixture(scope="session")
def embedder():
    from ragnet.index import Embedder

    emb = Embedder()
    emb.model  # noqa: B018 - load once for the whole session
    return emb


@pytest.fixture(scope="session")
def built(tmp_path_factory, docs, embedder):
    """An index built once; tests that modify files work on a copy (see ``index_copy``)."""
    from ragnet.index import Index

    path = tmp_path_factory.mktemp("index") / "idx"
    return Index.build(docs, path, chunk_tokens=64, overlap=8, embedder=embedder, show_progress=False)


@pytest.fixture
def index_copy(built, tmp_path) -> Path:
    """A fresh copy of the built index folder, safe to corrupt."""
    dst = tmp_path / "copy"
    shutil.copytree(built.path, dst)
    return dst
