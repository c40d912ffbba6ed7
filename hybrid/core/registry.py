"""One way to declare a component: a name in a :class:`Registry`, its parameters declared once as
:class:`~hybrid.core.params.Param` objects.

In the spirit of ir_measures (each measure declares its parameters once and registers its name) and of ranx's
fusion table: every kind of pluggable component the engine has is a registry of this one shape, filled by the
layer that owns the components (a registry never imports what it registers):

* system types: :data:`hybrid.recipes.registry.BUILDERS`, ``@register`` on each builder;
* reranker types: :data:`hybrid.recipes.builders.RERANKERS`, ``@RERANKERS.register`` there;
* fusion methods: :data:`hybrid.fusion.registry.FUSIONS`, ``FUSIONS.add`` in that module;
* learners: :data:`ltr.learners.LEARNERS`, ``@LEARNERS.register`` on each class;
* feature groups: :data:`features.pairs.registry.FEATURE_GROUPS`, the built-in groups and ``register_external``
  (a provider's options are its ``OPTIONS``, resolved by :func:`resolve`).

A component's parameters check the values given to it (:meth:`Registry.resolve`: unknown keys, wrong types and
missing required values are one error naming the key and the fix), fill in its defaults, and are what
``python -m hybrid.recipes types`` prints, so a default is written once, in its declaration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from hybrid.core.errors import ConfigError
from hybrid.core.params import Param, params_by_name, suggestion

#: How a registry reports a bad value: ``error(key, reason)`` returns the exception to raise (``key`` is None
#: when the problem is the whole table, e.g. a required key it lacks). The default names no file.
ErrorFactory = Callable[[str | None, str], Exception]


def plain_error(key: str | None, reason: str) -> ConfigError:
    return ConfigError(None, None, reason)


@dataclass(frozen=True)
class Component:
    """One registered component: its name, what the registry hands out (``target``: a builder function, a
    fusion function, a learner class, a feature provider), its declared parameters and a one-line doc."""

    name: str
    target: Any
    params: dict[str, Param] = field(default_factory=dict)
    doc: str = ""

    def defaults(self) -> dict[str, Any]:
        """``{parameter: default}`` for every declared parameter."""
        return {name: param.default for name, param in self.params.items()}

    def notes(self) -> list[str]:
        """What else a reader of ``python -m hybrid.recipes types`` should know about it, one line each."""
        return []


C = TypeVar("C", bound=Component)


def first_line(obj: Any) -> str:
    return (getattr(obj, "__doc__", None) or "").strip().split("\n")[0]


class Registry(Mapping[str, C], Generic[C]):
    """Components of one kind by name. ``common`` parameters are accepted by every component of the kind
    (a system's ``name``); ``fixed`` keys are accepted and left alone (a table's ``type``)."""

    def __init__(self, kind: str, component: type[C] = Component, *, common: Sequence[Param] = (),
                 fixed: Sequence[str] = (), noun: str = "key", describe: str = "", listed: bool = True):
        self.kind, self.component, self.noun = kind, component, noun
        self.common, self.fixed = tuple(common), tuple(fixed)
        self.describe = describe  # what the kind is, one line (``python -m hybrid.recipes types`` prints it)
        self._items: dict[str, C] = {}
        if listed:  # a registry made for a test stays out of the catalogue
            REGISTRIES[kind] = self

    # -- Mapping --------------------------------------------------------------------------------------------

    def __getitem__(self, name: str) -> C:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    # -- declaring -------------------------------------------------------------------------------------------

    def add(self, name: str, target: Any, params: Sequence[Param] = (), doc: str | None = None, **info: Any) -> C:
        """Register ``target`` under ``name`` with its parameters (``info``: the component class's own fields)."""
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        item = self.component(name, target, params_by_name(params), first_line(target) if doc is None else doc,
                              **info)
        self._items[name] = item
        return item

    def register(self, name: str, params: Sequence[Param] = (), doc: str | None = None, **info: Any) -> Callable:
        """Decorator: ``@REGISTRY.register("name", [Param(...), ...])`` over a function or class (its docstring's
        first line is the component's doc unless ``doc`` is given)."""

        def wrap(target: Any) -> Any:
            self.add(name, target, params, doc, **info)
            return target

        return wrap

    # -- using -----------------------------------------------------------------------------------------------

    def lookup(self, name: Any, error: ErrorFactory = plain_error, key: str | None = None) -> C:
        """The component ``name``, or ``error(key, ...)`` naming the known ones."""
        if isinstance(name, str) and name in self:
            return self[name]
        known = sorted(self)
        raise error(key, f"unknown {self.kind} {name!r}; known: {', '.join(known)}{suggestion(name, known)}")

    def parameters(self, name: str) -> list[Param]:
        """The component's declared parameters, then the kind's common ones."""
        return [*self[name].params.values(), *self.common]

    def keys_of(self, name: str) -> frozenset[str]:
        """Every key a table for component ``name`` may hold."""
        return frozenset(p.name for p in self.parameters(name)) | set(self.fixed)

    def resolve(self, name: str, values: Mapping[str, Any], error: ErrorFactory = plain_error,
                what: str | None = None, prefix: str = "") -> dict[str, Any]:
        """``values`` checked against component ``name``'s parameters, every default filled in (fixed keys kept).

        An unknown key, a value the parameter refuses, or a required parameter without a value is
        ``error(key, reason)``: the key (None for a missing one), what is wrong and what would be right.
        ``what`` names the component in the reasons (default: ``<kind> '<name>'``); ``prefix`` starts the reason
        for a refused value."""
        return resolve(self.parameters(name), values, error, what or f"{self.kind} {name!r}", prefix=prefix,
                       noun=self.noun, fixed=self.fixed)


def resolve(params: Sequence[Param], values: Mapping[str, Any], error: ErrorFactory = plain_error, what: str = "it",
            prefix: str = "", noun: str = "key", fixed: Sequence[str] = ()) -> dict[str, Any]:
    """``values`` checked against ``params``, every default filled in (``fixed`` keys accepted and kept): the one
    rule :meth:`Registry.resolve` and a feature group's options (:meth:`FeatureProvider.configure`) follow."""
    allowed = frozenset(p.name for p in params) | set(fixed)
    unknown = sorted(set(values) - allowed)
    if unknown:
        key = unknown[0]
        raise error(key, f"unknown {noun} {key!r} for {what}; allowed: {sorted(allowed)}"
                         f"{suggestion(key, sorted(allowed))}")
    out: dict[str, Any] = {key: values[key] for key in fixed if key in values}
    for param in params:
        value = values.get(param.name)
        if value is None:  # TOML has no null: None comes from a table built in code, and means unset
            if param.required:
                raise error(None, f"{what} needs {param.name!r}: {param.desc}")
            out[param.name] = param.default
            continue
        problem = param.problem(value)
        if problem:
            raise error(param.name, prefix + problem)
        out[param.name] = param.coerce(value)
    return out


#: Every registry, by kind, in the order they were made (``python -m hybrid.recipes types`` lists them all).
REGISTRIES: dict[str, Registry] = {}
