"""Programs take option objects: few constructor arguments, one name per concept, presets that set
fields of the objects, and no setting that silently does nothing."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from dataclasses import fields

import dspy
import pytest

import ragnet.programs
from ragnet.errors import InputError
from ragnet.eval.run.eval_indexes import NoIndex
from ragnet.programs import (STRATEGIES, BasicRAG, Hops, LMSteps, Loop, OneShotRAG, Pack, Reflection, ReflectiveRAG,
                             Search, options)
from ragnet.programs.options import option_fields
from ragnet.programs.registry import PRESETS, build_program

MAX_PARAMETERS = 8
OPTION_CLASSES = (Pack, Search, Hops, Loop, Reflection, LMSteps)


def _program_classes() -> list[type]:
    """Every ``dspy.Module`` class defined in a module of ``ragnet.programs``."""
    found = []
    for info in pkgutil.iter_modules(ragnet.programs.__path__, "ragnet.programs."):
        module = importlib.import_module(info.name)
        found += [cls for _, cls in inspect.getmembers(module, inspect.isclass)
                  if issubclass(cls, dspy.Module) and cls.__module__ == module.__name__]
    return found


def test_no_program_constructor_takes_more_than_eight_parameters():
    classes = _program_classes()
    assert set(STRATEGIES.values()) <= set(classes)
    counts = {cls.__name__: len(inspect.signature(cls.__init__).parameters) - 1 for cls in classes}  # self
    assert counts and max(counts.values()) <= MAX_PARAMETERS, counts


@pytest.mark.parametrize("program_class", list(STRATEGIES.values()))
def test_a_field_name_means_one_field_of_one_object_in_every_program(program_class):
    by_name = option_fields(program_class)  # raises where two of its objects share a field name
    own = set(inspect.signature(program_class.__init__).parameters) - {"self", "index", "budget"}
    assert not own & set(by_name), program_class  # nor is a field named like a constructor argument


def test_every_field_is_in_the_names_table_of_the_module_docstring():
    table = options.__doc__.split("=====", 1)[1]
    for kind in OPTION_CLASSES:
        for f in fields(kind):
            assert f.name in table and kind.__name__ in table, (kind.__name__, f.name)


def test_every_preset_sets_a_field_of_an_object_its_strategy_takes():
    for strategy, presets in PRESETS.items():
        program_class = STRATEGIES[strategy]
        own = set(inspect.signature(program_class.__init__).parameters)
        slots = {slot: kind for slot, kind in option_fields(program_class).values()}
        for preset, values in presets.items():
            for key in values:
                slot, dot, name = key.partition(".")
                assert (slot in slots and name in {f.name for f in fields(slots[slot])}) if dot else key in own, \
                    (strategy, preset, key)


@pytest.mark.parametrize("make, argument", [
    (lambda: Pack(budget=0), "pack.budget"),
    (lambda: Pack(temperature=0), "pack.temperature"),
    (lambda: Search(bm25_weight=1.5), "search.bm25_weight"),
    (lambda: Hops(searches=-1), "hops.searches"),
    (lambda: Loop(max_turns=0), "loop.max_turns"),
    (lambda: Loop(query_form="three"), "loop.query_form"),
    (lambda: Reflection(keep=0), "reflection.keep"),
    (lambda: LMSteps(recheck_share=0.01), "lm_steps.recheck_share"),
])
def test_a_bad_field_is_refused_when_the_object_is_made_naming_it(make, argument):
    with pytest.raises(InputError) as err:
        make()
    assert err.value.argument == argument


def test_the_program_fills_the_fields_left_open_and_holds_the_objects():
    iterative, combined = STRATEGIES["iterative"](NoIndex()), STRATEGIES["combined"](NoIndex())
    assert (iterative.loop.max_turns, iterative.budget, iterative.search.pool) == (5, None, 0)
    assert (combined.loop.max_turns, combined.budget, combined.pack.budget) == (3, 4000, 4000)
    oneshot = OneShotRAG(NoIndex(), pack=Pack(sentences=True))
    assert (oneshot.budget, oneshot.search.pool, oneshot.contextualize.enabled) == (4000, 100, False)
    assert iterative.contextualize.enabled is True  # the agents keep notes by default
    assert OneShotRAG(NoIndex(), 1000).pack == OneShotRAG(NoIndex(), pack=Pack(budget=1000)).pack  # the shortcut


@pytest.mark.parametrize("make, argument", [
    (lambda: ReflectiveRAG(NoIndex(), loop=Loop(fallback=False)), "loop.fallback"),
    (lambda: ReflectiveRAG(NoIndex(), loop=Loop(max_turns=3)), "loop.max_turns"),  # its cap is max_reflections
    (lambda: BasicRAG(NoIndex(), search=Search(pool=50)), "search.pool"),
    (lambda: STRATEGIES["combined"](NoIndex(), lm_steps=LMSteps(delete=False)), "lm_steps.delete"),
    (lambda: OneShotRAG(NoIndex(), lm_steps=LMSteps(rewrite=False)), "lm_steps.rewrite"),
    (lambda: OneShotRAG(NoIndex(), pack={"sentences": True}), "pack"),
])
def test_a_field_the_program_does_not_read_is_refused_not_ignored(make, argument):
    with pytest.raises(InputError) as err:
        make()
    assert err.value.argument == argument


def test_build_program_takes_fields_by_name_and_objects_whole_but_not_both():
    program = build_program("iterative:no-delete", NoIndex(), max_turns=3, bm25_weight=0.6, sentences=True,
                            budget=1000)
    assert program.loop.max_turns == 3 and program.search.bm25_weight == 0.6 and program.pack.sentences
    assert program.lm_steps.delete is False  # the preset's, kept beside the fields given by name
    given = build_program("oneshot", NoIndex(), pack=Pack(sentences=True, method="rank"), budget=800)
    assert (given.pack.method, given.budget) == ("rank", 800)
    with pytest.raises(InputError, match="set them in one place") as err:
        build_program("oneshot:sentences", NoIndex(), pack=Pack(method="rank"))
    assert err.value.argument == "pack"
    with pytest.raises(InputError, match="takes no 'lam'") as err:  # the hybrid weight is bm25_weight everywhere
        build_program("basic", NoIndex(), lam=0.5)
    assert err.value.argument == "strategy"
    router = build_program("router:iterative", NoIndex(), bm25_weight=0.7)
    assert router.simple.search.bm25_weight == router.hard.search.bm25_weight == 0.7
