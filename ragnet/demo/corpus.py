"""A deterministic synthetic corpus for ``ragnet demo``: city statistical yearbooks.

Every (city, year) gets one yearbook. All yearbooks are written from the same sentence
templates and differ only in the city, the year and the numbers:

    In 2021, the population of Aldermoor reached 412,300.
    In 2022, the population of Aldermoor reached 415,900.

Dense retrieval can hardly tell those two passages apart; only the year and the city
do. That is what the one-shot study's Chunk Filter exploits (drop chunks whose year or
place contradicts the question), so the demo shows it at work. The cities are fictional,
so an LM cannot answer from memory.

Questions come at the study's four levels, with gold answers computed from the very
numbers the text states:

- L1: a single fact ("What was the population of Aldermoor in 2021?");
- L2: reasoning inside one chunk (which of two figures in one sentence is larger, a ratio);
- L3: several chunks (compare two cities, two years, or find the peak year);
- L4: several chunks plus arithmetic (a change between years, a sum or a difference).

Numbers are drawn from ``random.Random`` seeded with the ``seed`` argument combined with
``zlib.crc32`` of the city, metric and year (never Python's salted ``hash``), so a given
seed yields the same corpus on every machine and a value does not depend on which other
cities or years are generated.

Example:
    >>> docs = generate_yearbooks(cities=["Aldermoor"], years=[2021])
    >>> docs[0].id, docs[0].metadata
    ('yearbook-aldermoor-2021', {'city': 'Aldermoor', 'year': 2021})
    >>> qs = generate_questions(cities=["Aldermoor", "Brightwater"], years=[2020, 2021], per_level=1)
    >>> sorted({q.level for q in qs})
    [1, 2, 3, 4]
"""

from __future__ import annotations

import functools
import json
import math
import random
import re
import string
import zlib
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ragnet._atomic import write_text
from ragnet.corpus.types import Document
from ragnet.errors import InputError

__all__ = [
    "CITIES",
    "YEARS",
    "GAZETTEER",
    "DemoQuestion",
    "generate_yearbooks",
    "generate_questions",
    "demo_questions",
    "write_demo_corpus",
    "write_demo_questions",
]

CITIES: tuple[str, ...] = ("Aldermoor", "Brightwater", "Corvale", "Dunmarsh", "Elderport", "Faircombe")
"""The default (fictional) cities."""

YEARS: tuple[int, ...] = (2019, 2020, 2021, 2022, 2023)
"""The default years."""

GAZETTEER: tuple[str, ...] = CITIES
"""Place names of the demo corpus, for the metadata extractor (``places``)."""

_REF_YEAR = 2000  # values follow a trend from this year on
_MIN_YEAR, _MAX_YEAR = 1900, 2100


# --------------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class _Metric:
    """One statistic: how to draw it and how questions speak about it.

    Values are exact: ints for ``kind="int"``, tenths (an int) for ``kind="dec1"``.
    ``base`` is the value range in ``_REF_YEAR``; for ``scaled`` metrics it is per 1,000
    inhabitants of the city's reference population.
    """

    key: str
    kind: str
    base: tuple[float, float]
    scaled: bool = False
    trend: tuple[float, float] = (0.0, 0.0)  # yearly multiplicative trend range
    noise: float = 0.02  # relative year-to-year noise amplitude
    step: int = 1  # rounding step for ints
    cap: float | None = None  # upper bound (percentages)
    units: tuple[str, ...] = ()  # answer variants: value + " " + unit (or "%")
    ask: str | None = None  # L1 question
    more: str | None = None  # L3: "more hospital beds"
    most: str | None = None  # L3: "the most hospital beds"
    change: str | None = None  # L4: "By how much did ... change between {y1} and {y2}?"
    total: str | None = None  # L4 sum over two cities
    diff: str | None = None  # L4: "the number of hospital beds"


_METRICS: tuple[_Metric, ...] = (
    # Population
    _Metric(
        "population", "int", (140_000, 900_000), trend=(-0.004, 0.012), noise=0.004, step=100,
        units=("inhabitants", "people", "residents"),
        ask="What was the population of {city} in {year}?",
        more="a larger population", most="the largest population",
        change="By how much did the population of {city} change between {y1} and {y2}?",
        total="What was the combined population of {cities} in {year}?",
        diff="population",
    ),
    _Metric("births", "int", (8.0, 12.0), scaled=True, trend=(-0.006, 0.004), noise=0.04, units=("births",),
            ask="How many births did {city} record in {year}?"),
    _Metric("deaths", "int", (8.0, 12.0), scaled=True, trend=(-0.004, 0.006), noise=0.04, units=("deaths",)),
    _Metric("median_age", "dec1", (34.0, 42.0), trend=(0.001, 0.004), noise=0.004, units=("years",),
            ask="What was the median age of residents of {city} in {year}?"),
    _Metric("households", "int", (380.0, 470.0), scaled=True, trend=(0.0, 0.01), noise=0.004, step=10,
            units=("households",)),
    # Economy
    _Metric(
        "gdp", "int", (30.0, 55.0), scaled=True, trend=(0.005, 0.035), noise=0.02, units=("million euros",),
        ask="What was the gross domestic product of {city} in {year}, in millions of euros?",
        more="a larger gross domestic product", most="the largest gross domestic product",
    ),
    _Metric(
        "unemployment", "dec1", (3.5, 10.5), trend=(-0.03, 0.02), noise=0.08, units=("%", "percent"),
        ask="What was the unemployment rate in {city} in {year}?",
        more="a higher unemployment rate", most="the highest unemployment rate",
        change="By how many percentage points did the unemployment rate in {city} change between {y1} and {y2}?",
    ),
    _Metric("businesses", "int", (60.0, 110.0), scaled=True, trend=(0.0, 0.02), noise=0.02, units=("businesses",),
            ask="How many businesses were registered in {city} in {year}?"),
    _Metric(
        "wage", "int", (1_700, 2_900), trend=(0.01, 0.03), noise=0.01, step=10, units=("euros",),
        ask="What was the average monthly wage in {city} in {year}?",
        more="a higher average monthly wage", most="the highest average monthly wage",
        change="By how much did the average monthly wage in {city} change between {y1} and {y2}?",
        diff="the average monthly wage",
    ),
    # Transport
    _Metric("bus_passengers", "dec1", (0.06, 0.12), scaled=True, trend=(-0.02, 0.02), noise=0.04,
            units=("million", "million passengers"),
            ask="How many passengers did buses in {city} carry in {year}?"),
    _Metric("rail_passengers", "dec1", (0.02, 0.08), scaled=True, trend=(-0.01, 0.03), noise=0.04,
            units=("million", "million passengers"),
            ask="How many passengers did rail services in {city} carry in {year}?"),
    _Metric("road_km", "int", (2.0, 3.5), scaled=True, trend=(0.0, 0.008), noise=0.003, units=("kilometres", "km")),
    _Metric("cars", "int", (380.0, 520.0), scaled=True, trend=(0.0, 0.015), noise=0.01, step=10, units=("cars",)),
    # Education
    _Metric(
        "schools", "int", (0.25, 0.4), scaled=True, trend=(-0.005, 0.005), noise=0.01, units=("schools",),
        ask="How many primary and secondary schools did {city} have in {year}?",
        more="more schools", most="the most schools",
        total="How many primary and secondary schools did {cities} have combined in {year}?",
        diff="the number of schools",
    ),
    _Metric("pupils", "int", (110.0, 150.0), scaled=True, trend=(-0.005, 0.01), noise=0.01, step=10, units=("pupils",)),
    _Metric("teachers", "int", (7.0, 10.5), scaled=True, trend=(-0.005, 0.012), noise=0.02, units=("teachers",)),
    _Metric("graduation", "dec1", (76.0, 88.0), trend=(0.0, 0.003), noise=0.01, cap=98.0, units=("%", "percent"),
            ask="What was the upper-secondary graduation rate in {city} in {year}?",
            more="a higher graduation rate", most="the highest graduation rate"),
    _Metric("university", "int", (20.0, 90.0), scaled=True, trend=(-0.005, 0.02), noise=0.02, step=10,
            units=("students",), ask="How many university students were enrolled in {city} in {year}?"),
    # Health
    _Metric(
        "hospital_beds", "int", (3.0, 5.5), scaled=True, trend=(-0.01, 0.01), noise=0.02, units=("beds", "hospital beds"),
        ask="How many hospital beds did {city} have in {year}?",
        more="more hospital beds", most="the most hospital beds",
        change="By how much did the number of hospital beds in {city} change between {y1} and {y2}?",
        total="How many hospital beds did {cities} have combined in {year}?",
        diff="the number of hospital beds",
    ),
    _Metric("physicians", "int", (3.0, 4.5), scaled=True, trend=(0.0, 0.015), noise=0.02, units=("physicians",)),
    _Metric("nurses", "int", (7.0, 10.0), scaled=True, trend=(0.0, 0.015), noise=0.02, units=("nurses",)),
    _Metric("life_expectancy", "dec1", (77.0, 82.0), trend=(0.0, 0.002), noise=0.002, units=("years",),
            ask="What was life expectancy at birth in {city} in {year}?",
            more="a higher life expectancy", most="the highest life expectancy"),
    _Metric("wait_days", "int", (14, 60), trend=(-0.015, 0.015), noise=0.08, units=("days",),
            ask="How many days did patients in {city} wait on average for a specialist appointment in {year}?"),
    # Environment
    _Metric("pm25", "dec1", (7.0, 22.0), trend=(-0.04, 0.0), noise=0.06,
            units=("micrograms per cubic metre", "µg/m³"),
            ask="What was the average PM2.5 concentration in {city} in {year}?"),
    _Metric("recycling", "dec1", (22.0, 40.0), trend=(0.005, 0.02), noise=0.03, cap=90.0, units=("%", "percent"),
            ask="What share of household waste did {city} recycle in {year}?",
            more="a higher recycling rate", most="the highest recycling rate"),
    _Metric(
        "rainfall", "int", (520, 1_350), noise=0.15, units=("millimetres", "mm"),
        ask="How much rain fell in {city} in {year}?",
        more="more rainfall", most="the most rainfall",
        diff="rainfall",
    ),
    _Metric("parks", "int", (0.8, 2.5), scaled=True, trend=(0.0, 0.01), noise=0.005, units=("hectares",),
            ask="How many hectares did public parks in {city} cover in {year}?"),
    # Housing
    _Metric(
        "house_price", "int", (120_000, 240_000), trend=(0.01, 0.035), noise=0.02, step=100, units=("euros",),
        ask="What was the average house price in {city} in {year}?",
        more="a higher average house price", most="the highest average house price",
        change="By how much did the average house price in {city} change between {y1} and {y2}?",
        diff="the average house price",
    ),
    _Metric(
        "new_dwellings", "int", (1.5, 5.0), scaled=True, trend=(-0.01, 0.03), noise=0.12, units=("dwellings",),
        ask="How many new dwellings were completed in {city} in {year}?",
        more="more new dwellings completed", most="the most new dwellings completed",
        change="By how much did the number of new dwellings completed in {city} change between {y1} and {y2}?",
        total="How many new dwellings were completed in {cities} combined in {year}?",
        diff="the number of new dwellings completed",
    ),
    _Metric("rent", "int", (450, 850), trend=(0.01, 0.03), noise=0.01, step=5, units=("euros",),
            ask="What was the average monthly rent in {city} in {year}?"),
    # Public safety
    _Metric(
        "offences", "int", (45.0, 80.0), scaled=True, trend=(-0.03, 0.01), noise=0.05, units=("offences",),
        ask="How many offences did police record in {city} in {year}?",
        more="more recorded offences", most="the most recorded offences",
        change="By how much did the number of offences recorded in {city} change between {y1} and {y2}?",
        total="How many offences did police record in {cities} combined in {year}?",
        diff="the number of recorded offences",
    ),
    _Metric("fire_callouts", "int", (4.0, 8.0), scaled=True, trend=(-0.01, 0.01), noise=0.06, units=("call-outs",),
            ask="How many call-outs did the fire services of {city} respond to in {year}?"),
    # Tourism
    _Metric(
        "visitors", "int", (1_000.0, 4_000.0), scaled=True, trend=(0.0, 0.05), noise=0.08, step=100,
        units=("visitors", "overnight visitors"),
        ask="How many overnight visitors did {city} welcome in {year}?",
        more="more overnight visitors", most="the most overnight visitors",
        change="By how much did the number of overnight visitors to {city} change between {y1} and {y2}?",
        total="How many overnight visitors did {cities} welcome combined in {year}?",
        diff="the number of overnight visitors",
    ),
    _Metric("occupancy", "dec1", (55.0, 78.0), trend=(-0.005, 0.008), noise=0.04, cap=95.0, units=("%", "percent"),
            ask="What was the average hotel occupancy in {city} in {year}?"),
)
_BY_KEY = {m.key: m for m in _METRICS}

# Derived values (computed from the drawn ones): household size, ridership changes.
_DERIVED_UNITS = {"household_size": ("persons",), "bus_change": ("%",), "rail_change": ("%",)}

# (section heading, sentence templates). Every sentence names the city and the year.
_SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Overview", (
        "The {city} Statistical Yearbook {year} presents official statistics on population, the economy, "
        "transport, education, health, the environment, housing, public safety and tourism in {city} for {year}.",
        "All figures describe the city of {city} as of the end of {year} unless stated otherwise.",
    )),
    ("Population", (
        "In {year}, the population of {city} reached {population}.",
        "{city} recorded {births} births and {deaths} deaths in {year}.",
        "The median age of {city} residents was {median_age} years in {year}.",
        "In {year}, {city} counted {households} households, with an average of {household_size} persons per household.",
    )),
    ("Economy", (
        "The gross domestic product of {city} was {gdp} million euros in {year}.",
        "In {year}, {city} had an unemployment rate of {unemployment}%.",
        "The number of registered businesses in {city} stood at {businesses} in {year}.",
        "The average monthly wage in {city} was {wage} euros in {year}.",
    )),
    ("Transport", (
        "Buses in {city} carried {bus_passengers} million passengers in {year}.",
        "Rail services in {city} carried {rail_passengers} million passengers in {year}.",
        "Compared with the previous year, bus ridership in {city} changed by {bus_change}% "
        "and rail ridership by {rail_change}% in {year}.",
        "{city} maintained {road_km} kilometres of paved roads in {year}, on which {cars} cars were registered.",
    )),
    ("Education", (
        "{city} had {schools} primary and secondary schools in {year}.",
        "In {year}, {pupils} pupils were enrolled in {city} schools, taught by {teachers} teachers.",
        "The upper-secondary graduation rate in {city} was {graduation}% in {year}.",
        "University enrolment in {city} stood at {university} students in {year}.",
    )),
    ("Health", (
        "Hospitals in {city} provided {hospital_beds} beds in {year}.",
        "In {year}, the public health service of {city} employed {physicians} physicians and {nurses} nurses.",
        "Life expectancy at birth in {city} was {life_expectancy} years in {year}.",
        "Patients in {city} waited an average of {wait_days} days for a specialist appointment in {year}.",
    )),
    ("Environment", (
        "In {year}, {city} recorded an average PM2.5 concentration of {pm25} micrograms per cubic metre.",
        "Households in {city} recycled {recycling}% of their waste in {year}.",
        "{city} received {rainfall} millimetres of rain in {year}.",
        "Public parks in {city} covered {parks} hectares in {year}.",
    )),
    ("Housing", (
        "The average house price in {city} was {house_price} euros in {year}.",
        "In {year}, {new_dwellings} new dwellings were completed in {city}.",
        "The average monthly rent in {city} was {rent} euros in {year}.",
    )),
    ("Public safety", (
        "Police in {city} recorded {offences} offences in {year}.",
        "The fire services of {city} responded to {fire_callouts} call-outs in {year}.",
    )),
    ("Tourism", (
        "{city} welcomed {visitors} overnight visitors in {year}.",
        "Hotels in {city} reported an average occupancy of {occupancy}% in {year}.",
    )),
)


def _fields(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


# value key -> template of the one sentence that states it
_SENTENCE_OF: dict[str, str] = {
    key: template
    for _, templates in _SECTIONS
    for template in templates
    for key in _fields(template)
    if key not in ("city", "year")
}


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class _Value:
    """An exact value (int; tenths for one-decimal figures) and its text in the yearbook."""

    exact: int
    text: str
    decimal: bool = False  # exact is in tenths

    @property
    def number(self) -> Fraction:
        return Fraction(self.exact, 10) if self.decimal else Fraction(self.exact)


def _stable(seed: int, *parts: object) -> int:
    """A seed for ``random.Random`` from ``seed`` and ``parts`` (stable across runs, no ``hash``)."""
    key = "|".join(str(p) for p in parts).encode("utf-8")
    return int(seed) * 0x1_0000_0000 + zlib.crc32(key)


def _fmt_int(n: int) -> str:
    return f"{n:,}"


def _fmt_tenths(t: int, signed: bool = False) -> str:
    sign = "-" if t < 0 else ("+" if signed else "")
    whole, tenth = divmod(abs(t), 10)
    return f"{sign}{whole:,}.{tenth}"


def _round_half_up(q: Fraction) -> int:
    """Round an exact fraction to the nearest int, halves away from zero."""
    return int(math.floor(abs(q) + Fraction(1, 2))) * (1 if q >= 0 else -1)


@functools.lru_cache(maxsize=256)
def _city_params(seed: int, city: str) -> tuple[float, dict[str, tuple[float, float]]]:
    """(population scale in thousands, metric -> (base value, yearly trend)) of a city."""
    rng = random.Random(_stable(seed, "city", city))
    params: dict[str, tuple[float, float]] = {}
    for m in _METRICS:
        params[m.key] = (rng.uniform(*m.base), rng.uniform(*m.trend))
    scale = params["population"][0] / 1000.0
    return scale, params


@functools.lru_cache(maxsize=4096)
def _raw_values(seed: int, city: str, year: int) -> dict[str, _Value]:
    """The drawn (non-derived) values of one yearbook."""
    scale, params = _city_params(seed, city)
    rng = random.Random(_stable(seed, "year", city, year))
    out: dict[str, _Value] = {}
    for m in _METRICS:
        base, trend = params[m.key]
        x = base * (scale if m.scaled else 1.0) * (1.0 + trend) ** (year - _REF_YEAR)
        x *= 1.0 + rng.uniform(-m.noise, m.noise)
        if m.cap is not None:
            x = min(x, m.cap - rng.uniform(0.0, 1.0))
        if m.kind == "int":
            n = max(m.step, int(round(x / m.step)) * m.step)
            out[m.key] = _Value(n, _fmt_int(n))
        else:
            t = max(1, int(round(x * 10)))
            out[m.key] = _Value(t, _fmt_tenths(t), decimal=True)
    return out


def _change(cur: _Value, prev: _Value) -> _Value:
    t = _round_half_up((cur.number - prev.number) * 1000 / prev.number)
    return _Value(t, _fmt_tenths(t, signed=True), decimal=True)


@functools.lru_cache(maxsize=4096)
def _values(seed: int, city: str, year: int) -> dict[str, _Value]:
    """Every value a yearbook states, drawn and derived."""
    out = dict(_raw_values(seed, city, year))
    prev = _raw_values(seed, city, year - 1)
    size = _round_half_up(out["population"].number * 10 / out["households"].number)
    out["household_size"] = _Value(size, _fmt_tenths(size), decimal=True)
    out["bus_change"] = _change(out["bus_passengers"], prev["bus_passengers"])
    out["rail_change"] = _change(out["rail_passengers"], prev["rail_passengers"])
    return out


def _render(template: str, city: str, year: int, values: dict[str, _Value]) -> str:
    texts = {key: v.text for key, v in values.items()}
    return template.format(city=city, year=year, **texts)


def _fact(seed: int, city: str, year: int, key: str) -> str:
    """The sentence of the (city, year) yearbook that states ``key``."""
    return _render(_SENTENCE_OF[key], city, year, _values(seed, city, year))


# --------------------------------------------------------------------------- documents


def _slug(city: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", city.casefold()).strip("-")


def _doc_id(city: str, year: int) -> str:
    return f"yearbook-{_slug(city)}-{year}"


def _title(city: str, year: int) -> str:
    return f"{city} Statistical Yearbook {year}"


def _check_cities(cities: Iterable[str] | None) -> list[str]:
    if isinstance(cities, str):
        raise InputError("give a list of city names, not one string", argument="cities")
    out = list(CITIES if cities is None else cities)
    if not out:
        raise InputError("at least one city is needed", argument="cities")
    slugs: dict[str, str] = {}
    for city in out:
        if not isinstance(city, str) or not city.strip() or not _slug(city):
            raise InputError(f"invalid city name {city!r}", argument="cities")
        if _slug(city) in slugs:
            raise InputError(f"cities {slugs[_slug(city)]!r} and {city!r} give the same document id", argument="cities")
        slugs[_slug(city)] = city
        if re.search(r"\d|[{}]", city):
            raise InputError(f"city name {city!r} must not contain digits or braces", argument="cities")
    return out


def _check_years(years: Iterable[int] | None) -> list[int]:
    out = list(YEARS if years is None else years)
    if not out:
        raise InputError("at least one year is needed", argument="years")
    for year in out:
        if isinstance(year, bool) or not isinstance(year, int) or not _MIN_YEAR <= year <= _MAX_YEAR:
            raise InputError(f"years must be ints from {_MIN_YEAR} to {_MAX_YEAR}, got {year!r}", argument="years")
    if len(set(out)) != len(out):
        raise InputError("years must be unique", argument="years")
    return out


def _check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"seed must be a non-negative int, got {seed!r}", argument="seed")
    return seed


def _yearbook_text(seed: int, city: str, year: int) -> str:
    values = _values(seed, city, year)
    paragraphs = []
    for heading, templates in _SECTIONS:
        body = " ".join(_render(t, city, year, values) for t in templates)
        paragraphs.append(f"{heading}\n{body}")
    return "\n\n".join(paragraphs)


def generate_yearbooks(
    cities: Sequence[str] | None = None, years: Sequence[int] | None = None, seed: int = 0
) -> list[Document]:
    """Generate one statistical yearbook ``Document`` per (city, year).

    Each yearbook has ten sections (Overview, Population, Economy, Transport, Education,
    Health, Environment, Housing, Public safety, Tourism), one paragraph each, about 700
    tokens in all; every sentence names the city and the year. Yearbooks of different
    cities and years share every sentence template and differ only in names and numbers.

    Args:
        cities: city names (default ``CITIES``).
        years: years, ints from 1900 to 2100 (default ``YEARS``).
        seed: non-negative int; the same seed always gives the same text.

    Returns:
        Documents ordered by city then year, with ids ``"yearbook-<city-slug>-<year>"``,
        titles ``"<City> Statistical Yearbook <year>"`` and metadata ``{"city", "year"}``.

    Raises:
        InputError: empty, duplicate or malformed cities or years, or a bad seed.

    Example:
        >>> doc = generate_yearbooks(["Aldermoor"], [2021])[0]
        >>> doc.title
        'Aldermoor Statistical Yearbook 2021'
        >>> doc.text.split("\\n\\n")[1].splitlines()[0]
        'Population'
    """
    seed = _check_seed(seed)
    city_list, year_list = _check_cities(cities), _check_years(years)
    return [
        Document(
            id=_doc_id(city, year),
            title=_title(city, year),
            text=_yearbook_text(seed, city, year),
            metadata={"city": city, "year": year},
            source="ragnet.demo.corpus",
        )
        for city in city_list
        for year in year_list
    ]


# --------------------------------------------------------------------------- questions


@dataclass(frozen=True)
class DemoQuestion:
    """A question about the synthetic yearbooks with its gold answer and evidence.

    Attributes:
        id: stable id, ``"synthetic-l<level>-<n>"``.
        question: the question text (names the city and year(s) it is about).
        answers: accepted answers; ``answers[0]`` is the canonical one, the rest are
            formatting variants ("412,300", "412300", "412,300 inhabitants").
        level: 1 single fact, 2 reasoning in one chunk, 3 several chunks,
            4 several chunks plus arithmetic.
        gold_doc_ids: ids of the yearbooks holding the evidence.
        gold_facts: the exact sentences (verbatim in those yearbooks) that hold it.
        type: the question template, e.g. ``"lookup"``, ``"compare_cities"``, ``"change"``.
        gold_titles: titles of the gold yearbooks, in ``gold_doc_ids`` order.
        wrong_answers: for choice questions ("A or B?"), the options that are wrong. An answer
            that names them too ("bus ridership or rail ridership") has not chosen; see
            :func:`choice_correct`.

    Example:
        >>> q = generate_questions(cities=["Aldermoor"], years=[2021, 2022], per_level=1)[0]
        >>> q.level, q.type
        (1, 'lookup')
    """

    id: str
    question: str
    answers: list[str]
    level: int
    gold_doc_ids: list[str]
    gold_facts: list[str]
    type: str
    gold_titles: list[str] = field(default_factory=list)
    wrong_answers: list[str] = field(default_factory=list)

    @property
    def answer(self) -> str:
        """The canonical answer, ``answers[0]``."""
        return self.answers[0]

    def to_dict(self) -> dict[str, Any]:
        """A record in the common question schema of ``ragnet.eval.run.datasets`` (plus ``gold_facts``).

        ``gold_passage_ids`` and ``gold_titles`` point at the yearbooks; ``context`` is null
        because the yearbooks form a pooled corpus (``write_demo_corpus``).

        Example:
            >>> demo_questions(1)[0].to_dict()["gold_titles"]
            ['Corvale Statistical Yearbook 2022']
        """
        record = asdict(self)
        record.update(gold_passage_ids=list(self.gold_doc_ids), gold_sentences=None, context=None)
        return record


def _spellings(value: _Value, signed: bool = False) -> list[str]:
    """Unit-less spellings of a number: with and without separators (and sign)."""
    if value.decimal:
        first = _fmt_tenths(value.exact, signed=signed)
        out = [first, first.replace(",", ""), _fmt_tenths(value.exact), _fmt_tenths(value.exact).replace(",", "")]
    else:
        first = f"+{value.exact:,}" if signed and value.exact > 0 else _fmt_int(value.exact)
        out = [first, first.replace(",", ""), _fmt_int(value.exact), str(value.exact)]
    if value.exact < 0:  # "it decreased by 3,200" is right too
        out += _spellings(_Value(-value.exact, "", value.decimal))
    return out


def _variants(value: _Value, key: str, signed: bool = False) -> list[str]:
    """Accepted spellings of a numeric answer, the yearbook's own first, then with units."""
    units = _BY_KEY[key].units if key in _BY_KEY else _DERIVED_UNITS.get(key, ())
    out: list[str] = []
    for text in _spellings(value, signed):
        out.append(text)
        out.extend(f"{text}{unit}" if unit == "%" else f"{text} {unit}" for unit in units)
    return list(dict.fromkeys(out))


def _join_years(years: list[int]) -> str:
    """Every year spelled out ("2019, 2020 or 2021"), so a year filter keeps all their chunks."""
    ys = [str(y) for y in sorted(years)]
    return ys[0] if len(ys) == 1 else ", ".join(ys[:-1]) + f" or {ys[-1]}"


class _Skip(Exception):
    """A drawn question is degenerate (a tie); draw another."""


@dataclass
class _Ctx:
    seed: int
    cities: list[str]
    years: list[int]
    rng: random.Random

    def val(self, city: str, year: int, key: str) -> _Value:
        return _values(self.seed, city, year)[key]

    def fact(self, city: str, year: int, key: str) -> str:
        return _fact(self.seed, city, year, key)

    def pick(self, keys: Iterable[str]) -> str:
        return self.rng.choice(sorted(keys))


# question, answers, the (city, year) of each gold fact, gold facts
# question, answers, gold (city, year) pairs, gold facts[, wrong options of a choice question]
_Q = tuple


def _metrics_with(attr: str) -> list[str]:
    return [m.key for m in _METRICS if getattr(m, attr)]


# L1 -------------------------------------------------------------------------


def _q_lookup(c: _Ctx) -> _Q:
    key, city, year = c.pick(_metrics_with("ask")), c.rng.choice(c.cities), c.rng.choice(c.years)
    question = _BY_KEY[key].ask.format(city=city, year=year)
    return question, _variants(c.val(city, year, key), key), [(city, year)], [c.fact(city, year, key)]


# L2 -------------------------------------------------------------------------


def _q_faster_growth(c: _Ctx) -> _Q:
    city, year = c.rng.choice(c.cities), c.rng.choice(c.years)
    bus, rail = c.val(city, year, "bus_change").exact, c.val(city, year, "rail_change").exact
    if bus == rail or max(bus, rail) <= 0:  # a tie, or neither grew
        raise _Skip
    winner = "bus" if bus > rail else "rail"
    question = f"Which grew faster in {city} in {year} compared with the previous year, bus ridership or rail ridership?"
    answers = [f"{winner} ridership", winner, "buses" if winner == "bus" else "rail services"]
    loser = "rail" if winner == "bus" else "bus"
    return question, answers, [(city, year)], [c.fact(city, year, "bus_change")], [f"{loser} ridership"]


def _q_births_deaths(c: _Ctx) -> _Q:
    city, year = c.rng.choice(c.cities), c.rng.choice(c.years)
    births, deaths = c.val(city, year, "births").exact, c.val(city, year, "deaths").exact
    if births == deaths:
        raise _Skip
    more = "births" if births > deaths else "deaths"
    question = f"Did {city} record more births or more deaths in {year}?"
    less = "deaths" if more == "births" else "births"
    return question, [more, f"more {more}"], [(city, year)], [c.fact(city, year, "births")], [less]


def _q_pupils_per_teacher(c: _Ctx) -> _Q:
    city, year = c.rng.choice(c.cities), c.rng.choice(c.years)
    pupils, teachers = c.val(city, year, "pupils").number, c.val(city, year, "teachers").number
    ratio = _round_half_up(pupils * 10 / teachers)
    value = _Value(ratio, _fmt_tenths(ratio), decimal=True)
    question = f"How many pupils per teacher were there in {city} schools in {year}, to one decimal place?"
    answers = [value.text, f"{value.text} pupils per teacher", f"{value.text} pupils"]
    return question, answers, [(city, year)], [c.fact(city, year, "pupils")]


def _q_threshold(c: _Ctx) -> _Q:
    key = c.pick(["unemployment", "recycling", "graduation", "occupancy"])
    city, year = c.rng.choice(c.cities), c.rng.choice(c.years)
    value = c.val(city, year, key)
    whole = value.exact // 10
    threshold = whole + c.rng.choice([-1, 0, 1, 2])  # an integer percent near the value
    if threshold * 10 == value.exact or threshold <= 0:
        raise _Skip
    noun = {
        "unemployment": f"the unemployment rate in {city}",
        "recycling": f"the share of household waste recycled in {city}",
        "graduation": f"the upper-secondary graduation rate in {city}",
        "occupancy": f"the average hotel occupancy in {city}",
    }[key]
    question = f"Was {noun} above {threshold}% in {year}?"
    answers = ["yes"] if value.exact > threshold * 10 else ["no"]
    return question, answers, [(city, year)], [c.fact(city, year, key)]


# L3 -------------------------------------------------------------------------


def _two(c: _Ctx, items: list) -> list:
    return c.rng.sample(items, 2)


def _q_compare_cities(c: _Ctx) -> _Q:
    key, year = c.pick(_metrics_with("more")), c.rng.choice(c.years)
    a, b = _two(c, c.cities)
    va, vb = c.val(a, year, key).exact, c.val(b, year, key).exact
    if va == vb:
        raise _Skip
    winner = a if va > vb else b
    question = f"Which city had {_BY_KEY[key].more} in {year}, {a} or {b}?"
    loser = b if winner == a else a
    return question, [winner], [(a, year), (b, year)], [c.fact(a, year, key), c.fact(b, year, key)], [loser]


def _q_compare_years(c: _Ctx) -> _Q:
    key, city = c.pick(_metrics_with("more")), c.rng.choice(c.cities)
    y1, y2 = sorted(_two(c, c.years))
    v1, v2 = c.val(city, y1, key).exact, c.val(city, y2, key).exact
    if v1 == v2:
        raise _Skip
    winner = y1 if v1 > v2 else y2
    question = f"In which year did {city} have {_BY_KEY[key].more}, {y1} or {y2}?"
    loser = y2 if winner == y1 else y1
    return (question, [str(winner)], [(city, y1), (city, y2)], [c.fact(city, y1, key), c.fact(city, y2, key)],
            [str(loser)])


def _q_peak_year(c: _Ctx) -> _Q:
    key, city = c.pick(_metrics_with("most")), c.rng.choice(c.cities)
    years = sorted(c.years)
    vals = [c.val(city, y, key).exact for y in years]
    best = max(vals)
    if vals.count(best) > 1:
        raise _Skip
    winner = years[vals.index(best)]
    question = f"In which year, {_join_years(years)}, did {city} have {_BY_KEY[key].most}?"
    return (question, [str(winner)], [(city, y) for y in years], [c.fact(city, y, key) for y in years],
            [str(y) for y in years if y != winner])


# L4 -------------------------------------------------------------------------


def _diff_value(a: _Value, b: _Value) -> _Value:
    d = a.exact - b.exact
    return _Value(d, _fmt_tenths(d) if a.decimal else _fmt_int(d), a.decimal)


def _q_change(c: _Ctx) -> _Q:
    key, city = c.pick(_metrics_with("change")), c.rng.choice(c.cities)
    y1, y2 = sorted(_two(c, c.years))
    delta = _diff_value(c.val(city, y2, key), c.val(city, y1, key))
    if delta.exact == 0:
        raise _Skip
    question = _BY_KEY[key].change.format(city=city, y1=y1, y2=y2)
    answers = _variants(delta, key, signed=True)
    if key == "unemployment":  # a change of a rate is in percentage points, not percent
        plain = [a for a in answers if not a.endswith(("%", "percent"))]
        answers = [v for a in plain for v in (a, f"{a} percentage points")]
    return question, answers, [(city, y1), (city, y2)], [c.fact(city, y1, key), c.fact(city, y2, key)]


def _q_sum_cities(c: _Ctx) -> _Q:
    key, year = c.pick(_metrics_with("total")), c.rng.choice(c.years)
    a, b = _two(c, c.cities)
    va, vb = c.val(a, year, key), c.val(b, year, key)
    total = _Value(va.exact + vb.exact, _fmt_int(va.exact + vb.exact))
    question = _BY_KEY[key].total.format(cities=f"{a} and {b}", year=year)
    return question, _variants(total, key), [(a, year), (b, year)], [c.fact(a, year, key), c.fact(b, year, key)]


def _q_diff_cities(c: _Ctx) -> _Q:
    key, year = c.pick(_metrics_with("diff")), c.rng.choice(c.years)
    a, b = _two(c, c.cities)
    va, vb = c.val(a, year, key), c.val(b, year, key)
    delta = _diff_value(va, vb) if va.exact >= vb.exact else _diff_value(vb, va)
    if delta.exact == 0:
        raise _Skip
    question = f"What was the difference in {_BY_KEY[key].diff} between {a} and {b} in {year}?"
    return question, _variants(delta, key), [(a, year), (b, year)], [c.fact(a, year, key), c.fact(b, year, key)]


# level -> [(type, builder, needs several cities, needs several years)]
_TYPES: dict[int, list[tuple[str, Callable[[_Ctx], _Q], bool, bool]]] = {
    1: [("lookup", _q_lookup, False, False)],
    2: [
        ("faster_growth", _q_faster_growth, False, False),
        ("births_vs_deaths", _q_births_deaths, False, False),
        ("ratio", _q_pupils_per_teacher, False, False),
        ("threshold", _q_threshold, False, False),
    ],
    3: [
        ("compare_cities", _q_compare_cities, True, False),
        ("compare_years", _q_compare_years, False, True),
        ("peak_year", _q_peak_year, False, True),
    ],
    4: [
        ("change", _q_change, False, True),
        ("sum_cities", _q_sum_cities, True, False),
        ("difference_cities", _q_diff_cities, True, False),
    ],
}


def _check_docs(docs: Sequence[Document]) -> tuple[list[str], list[int], dict[str, Document]]:
    by_id: dict[str, Document] = {}
    cities: list[str] = []
    years: list[int] = []
    for doc in docs:
        city, year = doc.metadata.get("city"), doc.metadata.get("year")
        if not isinstance(city, str) or not isinstance(year, int):
            raise InputError(
                f"document {doc.id!r} is not a synthetic yearbook (metadata needs 'city' and 'year')", argument="docs"
            )
        by_id[doc.id] = doc
        if city not in cities:
            cities.append(city)
        if year not in years:
            years.append(year)
    if not by_id:
        raise InputError("no documents given", argument="docs")
    return cities, years, by_id


def generate_questions(
    docs: Sequence[Document] | None = None,
    cities: Sequence[str] | None = None,
    years: Sequence[int] | None = None,
    seed: int = 0,
    per_level: int = 3,
) -> list[DemoQuestion]:
    """Generate questions at the four levels of the one-shot study, with gold answers.

    Levels cycle through their question types: L1 ``lookup``; L2 ``faster_growth``,
    ``births_vs_deaths``, ``ratio`` (pupils per teacher), ``threshold``; L3
    ``compare_cities``, ``compare_years``, ``peak_year``; L4 ``change``, ``sum_cities``,
    ``difference_cities``. Answers are computed exactly from the numbers the yearbooks
    state; every gold fact is a sentence found verbatim in its gold yearbook.

    Args:
        docs: yearbooks from ``generate_yearbooks`` (optional). When given, the cities and
            years default to theirs, and the gold facts are checked against their text,
            which catches a ``seed`` different from the one the docs were made with.
        cities: city names (default: those of ``docs``, else ``CITIES``).
        years: years (default: those of ``docs``, else ``YEARS``).
        seed: the seed of the yearbooks; also drives which questions are drawn.
        per_level: number of questions per level (>= 1).

    Returns:
        ``4 * per_level`` questions, ordered by level.

    Raises:
        InputError: bad arguments, one city and one year only (L3/L4 need two of
            something), or ``docs`` that do not hold the gold facts.

    Example:
        >>> qs = generate_questions(cities=["Aldermoor", "Brightwater"], years=[2021, 2022], per_level=2)
        >>> [q.level for q in qs]
        [1, 1, 2, 2, 3, 3, 4, 4]
        >>> q = qs[-1]  # L4: two yearbooks and arithmetic
        >>> len(q.gold_doc_ids), len(q.gold_facts)
        (2, 2)
    """
    seed = _check_seed(seed)
    by_id: dict[str, Document] | None = None
    if docs is not None:
        doc_cities, doc_years, by_id = _check_docs(docs)
        cities = doc_cities if cities is None else cities
        years = doc_years if years is None else years
    city_list, year_list = _check_cities(cities), _check_years(years)
    if isinstance(per_level, bool) or not isinstance(per_level, int) or per_level < 1:
        raise InputError(f"per_level must be an int >= 1, got {per_level!r}", argument="per_level")
    if len(city_list) < 2 and len(year_list) < 2:
        raise InputError("L3 and L4 questions need at least two cities or two years", argument="cities")
    questions: list[DemoQuestion] = []
    for level, types in _TYPES.items():
        feasible = [t for t in types if (not t[2] or len(city_list) > 1) and (not t[3] or len(year_list) > 1)]
        ctx = _Ctx(seed, city_list, year_list, random.Random(_stable(seed, "questions", level)))
        seen: set[str] = set()
        for n in range(per_level):
            qtype, build, _, _ = feasible[n % len(feasible)]
            built: _Q | None = None
            for _attempt in range(200):  # redraw ties and repeats (a tiny corpus may force a repeat)
                try:
                    built = build(ctx)
                except _Skip:
                    continue
                if built[0] not in seen:
                    break
            if built is None:
                raise InputError(f"could not draw a {qtype!r} question from these cities and years", argument="years")
            question, answers, where, facts = built[:4]
            wrong = list(built[4]) if len(built) > 4 else []
            seen.add(question)
            if by_id is not None:
                _verify(by_id, where, facts, seed)
            gold = list(dict.fromkeys(where))
            questions.append(
                DemoQuestion(
                    id=f"synthetic-l{level}-{n + 1:02d}",
                    question=question,
                    answers=answers,
                    level=level,
                    gold_doc_ids=[_doc_id(city, year) for city, year in gold],
                    gold_facts=facts,
                    type=qtype,
                    gold_titles=[_title(city, year) for city, year in gold],
                    wrong_answers=wrong,
                )
            )
    return questions


def _verify(by_id: dict[str, Document], where: list[tuple[str, int]], facts: list[str], seed: int) -> None:
    """Check that each gold fact is in the given yearbook it comes from."""
    for (city, year), fact in zip(where, facts):
        doc = by_id.get(_doc_id(city, year))
        if doc is None or fact not in doc.text:
            raise InputError(
                f"document {_doc_id(city, year)!r} does not state {fact!r}; were the yearbooks "
                f"generated with seed={seed}?",
                argument="docs",
            )


def demo_questions(n_per_level: int = 2) -> list[DemoQuestion]:
    """The fixed question set ``ragnet demo`` asks: default cities, years and seed 0.

    Example:
        >>> [q.level for q in demo_questions(1)]
        [1, 2, 3, 4]
    """
    return generate_questions(per_level=n_per_level)


# --------------------------------------------------------------------------- files


def write_demo_corpus(
    directory: str | Path,
    cities: Sequence[str] | None = None,
    years: Sequence[int] | None = None,
    seed: int = 0,
) -> Path:
    """Write the yearbooks to ``<directory>/yearbooks.jsonl`` (atomically) for ``ragnet index``.

    Each line is ``{"id", "title", "text", "metadata": {"city", "year"}}``, the JSONL shape
    ``ragnet.load_documents`` reads.

    Example:
        >>> import tempfile
        >>> path = write_demo_corpus(tempfile.mkdtemp(), cities=["Aldermoor"], years=[2021])
        >>> path.name
        'yearbooks.jsonl'
    """
    docs = generate_yearbooks(cities, years, seed)
    lines = [
        json.dumps({"id": d.id, "title": d.title, "text": d.text, "metadata": d.metadata}, ensure_ascii=False)
        for d in docs
    ]
    path = Path(directory) / "yearbooks.jsonl"
    write_text(path, "\n".join(lines) + "\n")
    return path


def write_demo_questions(
    directory: str | Path,
    cities: Sequence[str] | None = None,
    years: Sequence[int] | None = None,
    seed: int = 0,
    per_level: int = 3,
) -> Path:
    """Write questions to ``<directory>/questions.jsonl`` in ``ragnet.eval``'s question schema.

    Example:
        >>> import tempfile
        >>> write_demo_questions(tempfile.mkdtemp(), per_level=1).name
        'questions.jsonl'
    """
    questions = generate_questions(cities=cities, years=years, seed=seed, per_level=per_level)
    path = Path(directory) / "questions.jsonl"
    write_text(path, "\n".join(json.dumps(q.to_dict(), ensure_ascii=False) for q in questions) + "\n")
    return path


def choice_correct(prediction: str, question: DemoQuestion) -> float:
    """1.0 when ``prediction`` matches a gold answer (exact or contained) and names no wrong option.

    Example:
        >>> q = DemoQuestion("q", "Which grew faster, bus or rail ridership?", ["rail ridership", "rail"],
        ...                  2, [], [], "faster_growth", wrong_answers=["bus ridership"])
        >>> choice_correct("Rail ridership grew faster.", q)
        1.0
        >>> choice_correct("bus ridership or rail ridership", q)
        0.0
    """
    from ragnet.eval.metrics import contains_match, exact_match

    ok = max(exact_match(prediction, question.answers), contains_match(prediction, question.answers))
    if ok and question.wrong_answers and contains_match(prediction, question.wrong_answers):
        return 0.0
    return ok
