"""Record classes without the dataclasses module.

Importing `dataclasses` imports `inspect` (and with it ast, dis, tokenize, ...): ~18 ms of every
start here, a fifth of a re-ingest's whole run.  bootlog's record classes are made by `record`
instead: from the class's annotated fields, the __init__, __eq__ and __repr__ that @dataclass
would write (defaults, default factories, fields left out of the comparison or the repr),
optionally with __slots__, and frozen (no assignment after __init__, hashable).  The field
names are in `_fields`; replace() is dataclasses.replace.
"""
from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typing for the annotations only: importing it costs ~5 ms of every start)
    from typing import Any, Callable

_NONE = object()


class spec:
    """A field's default made per instance (`factory`), or a default with options."""

    __slots__ = ("default", "factory", "compare", "repr")

    def __init__(self, default: Any = _NONE, *, factory: Callable[[], Any] | None = None,
                 compare: bool = True, repr: bool = True) -> None:
        self.default, self.factory, self.compare, self.repr = default, factory, compare, repr


def record(cls: type | None = None, *, slots: bool = False, frozen: bool = False) -> Any:
    def wrap(c: type) -> type:
        return _make(c, slots, frozen)
    return wrap if cls is None else wrap(cls)


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise AttributeError(f"cannot assign to field {name!r} of frozen {type(self).__name__}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise AttributeError(f"cannot delete field {name!r} of frozen {type(self).__name__}")


def _make(cls: type, slots: bool, frozen: bool) -> type:
    names = [n for n, a in cls.__dict__.get("__annotations__", {}).items()
             if not str(a).startswith(("ClassVar", "typing.ClassVar"))]
    ns = {k: v for k, v in cls.__dict__.items() if k not in ("__dict__", "__weakref__")}
    env: dict[str, Any] = {"_NONE": _NONE, "_set": object.__setattr__}
    params, body, cmp, shown = [], [], [], []
    for n in names:
        d = ns.pop(n, _NONE)
        opt = d if isinstance(d, spec) else spec(d)
        if opt.factory is not None:
            env[f"_f_{n}"] = opt.factory
            params.append(f"{n}=_NONE")
            value = f"_f_{n}() if {n} is _NONE else {n}"
        else:
            if opt.default is not _NONE:
                env[f"_d_{n}"] = opt.default
                params.append(f"{n}=_d_{n}")
            elif any("=" in p for p in params):
                raise TypeError(f"{cls.__name__}: field {n} without a default after one with a default")
            else:
                params.append(n)
            value = n
        body.append(f"    _set(self, {n!r}, {value})" if frozen else f"    self.{n} = {value}")
        if opt.compare:
            cmp.append(n)
        if opt.repr:
            shown.append(n)
    # only __init__ is compiled (the hot one: compiling all four was ~1.5 ms of every start);
    # the others compare, hash and show the fields' tuple as @dataclass's do
    src = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(src, env)
    ns["__init__"] = env["__init__"]
    if cmp:
        fields = _fields_tuple(cmp)
        ns["__eq__"] = _eq(fields)
        if frozen:
            ns["__hash__"] = _hash(fields)
    ns["__repr__"] = _repr(cls.__qualname__, tuple(shown))
    if not cmp:
        ns["__hash__"] = None if not frozen else object.__hash__
    elif not frozen:
        ns["__hash__"] = None  # (as @dataclass: an instance that compares by value is not hashable)
    if frozen:
        ns["__setattr__"], ns["__delattr__"] = _frozen_setattr, _frozen_delattr
        if slots:  # (pickle's default sets slots with setattr: refused when frozen)
            ns["__getstate__"] = lambda self: [getattr(self, n) for n in names]
            ns["__setstate__"] = lambda self, state: [object.__setattr__(self, n, v)
                                                      for n, v in zip(names, state)] and None
    ns["_fields"] = tuple(names)
    if slots:
        ns["__slots__"] = tuple(names)
    out = type(cls)(cls.__name__, cls.__bases__, ns)
    out.__qualname__ = cls.__qualname__
    for k in ("__init__", "__eq__", "__hash__", "__repr__"):
        fn = ns.get(k)
        if hasattr(fn, "__code__"):
            fn.__qualname__ = f"{cls.__qualname__}.{k}"
    return out


def _fields_tuple(names: list[str]) -> Callable[[Any], tuple]:
    if len(names) == 1:  # (attrgetter of one name gives the value, not a 1-tuple)
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)


def _eq(fields: Callable[[Any], tuple]) -> Callable[[Any, Any], Any]:
    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return fields(self) == fields(other)
    return __eq__


def _hash(fields: Callable[[Any], tuple]) -> Callable[[Any], int]:
    def __hash__(self):
        return hash(fields(self))
    return __hash__


def _repr(qualname: str, shown: tuple[str, ...]) -> Callable[[Any], str]:
    def __repr__(self):
        return f"{qualname}(" + ", ".join([f"{n}={getattr(self, n)!r}" for n in shown]) + ")"
    return __repr__


def replace(obj: Any, **changes: Any) -> Any:
    """A copy of a record with some fields changed (dataclasses.replace)."""
    unknown = set(changes) - set(obj._fields)
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field {sorted(unknown)[0]!r}")
    return type(obj)(**{n: changes[n] if n in changes else getattr(obj, n) for n in obj._fields})
