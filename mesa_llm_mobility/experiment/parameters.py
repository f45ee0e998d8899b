"""Declared model parameters: each model's parameters written once, everything else derived.

A model declares its parameters as one frozen dataclass, a subclass of :class:`Parameters`, with
one :func:`parameter` field each (Mesa 3.5's ``Scenario`` pattern, typed and validated)::

    @dataclass(frozen=True, kw_only=True)
    class UrbanParameters(Parameters):
        days: int = parameter(3, "days to simulate", unit="day", ge=1, forkable=True)

That declaration is the model constructor's input, the run's ``config.json``
(:meth:`Parameters.to_config` / :meth:`Parameters.from_config`), the sweep grid's keys and
value parser (:meth:`Parameters.parse_values`), the command line's flags
(:func:`add_parameter_arguments`, help text from the field's ``help`` and ``unit``), and what a
fork may change (``forkable``). Adding a parameter is one field in one file.

Values are checked when the object is made: a value of the wrong type or out of bounds raises
:class:`ParameterError`, one line that names the parameter (and the file or flag it came from).
An input declared with ``loaded=True`` (a scenario, a plaza, a history) also takes an already
loaded object instead of its file name or path; such a parameter cannot be written to a
``config.json`` and says so.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import math
import numbers
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Self, get_args, get_origin

from mesa_llm_mobility.cognition.settings import parse_brain_setting

__all__ = [
    "Declared",
    "ParameterError",
    "ParameterSpec",
    "Parameters",
    "RunOptions",
    "add_parameter_arguments",
    "load_model_class",
    "parameter",
    "parameters_from_arguments",
]

_MISSING = dataclasses.MISSING


class ParameterError(ValueError):
    """A parameter value is of the wrong type, out of bounds, or unknown (one line)."""


@dataclass(frozen=True)
class ParameterSpec:
    """What a parameter field declares besides its type and default.

    Attributes:
        help: One sentence for the docs, the command line and the apps.
        unit: The unit of a number (``"min"``, ``"s"``, ``"day"``), or None.
        ge, gt, le, lt: Bounds of a number (inclusive ``ge``/``le``, exclusive ``gt``/``lt``).
        flag: The command-line name, if not the field's own (``agents`` for ``n_agents``).
        forkable: Whether a fork may change it.
        command_line: Whether ``mlm`` offers it as a flag.
        loaded: Whether an already loaded object is taken instead of a name or path.
        parse: How a value typed on the command line becomes one (default: by the type).
    """

    help: str
    unit: str | None = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    flag: str | None = None
    forkable: bool = False
    command_line: bool = True
    loaded: bool = False
    parse: Callable[[str], Any] | None = None


def parameter(
    default: Any,
    help: str,
    *,
    unit: str | None = None,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    flag: str | None = None,
    forkable: bool = False,
    command_line: bool = True,
    loaded: bool = False,
    parse: Callable[[str], Any] | None = None,
) -> Any:
    """Declare one parameter field of a :class:`Parameters` subclass.

    Args:
        default: The default value (immutable: a tuple, not a list).
        help: One sentence saying what it is.
        unit: The unit of a number.
        ge: Inclusive lower bound of a number.
        gt: Exclusive lower bound of a number.
        le: Inclusive upper bound of a number.
        lt: Exclusive upper bound of a number.
        flag: The command-line name, if not the field's name.
        forkable: Whether a fork may change it.
        command_line: Whether ``mlm`` offers it as a flag.
        loaded: Whether an already loaded object (a scenario, a table) is taken instead of
            a name or path.
        parse: How a value typed on the command line becomes one (raise ``ValueError``).

    Returns:
        A dataclass field carrying a :class:`ParameterSpec`.
    """
    spec = ParameterSpec(
        help,
        unit,
        ge,
        gt,
        le,
        lt,
        flag,
        forkable=forkable,
        command_line=command_line,
        loaded=loaded,
        parse=parse,
    )
    return dataclasses.field(default=default, metadata={"parameter": spec})


# ---------------------------------------------------------------------------- types
@dataclass(frozen=True)
class _FieldType:
    """A field's annotation, read once: the plain types, choices and classes it admits."""

    plain: tuple[type, ...]
    """Among ``bool``, ``int``, ``float``, ``str``, ``Path``, ``dict``."""
    choices: tuple[Any, ...] | None
    """The values of a ``Literal``."""
    optional: bool
    """Whether ``None`` is admitted."""

    def describe(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(map(str, self.choices))
        names = {
            bool: "true or false",
            int: "a whole number",
            float: "a number",
            str: "text",
            Path: "a path",
            dict: "a mapping",
        }
        words = [names[kind] for kind in self.plain]
        if self.optional:
            words.append("none")
        return " or ".join(words)


def _read_type(annotation: Any) -> _FieldType:
    members = (
        get_args(annotation)
        if isinstance(annotation, types.UnionType)
        or get_origin(annotation) is typing.Union
        else (annotation,)
    )
    plain: list[type] = []
    choices: tuple[Any, ...] | None = None
    optional = False
    for member in members:
        origin = get_origin(member)
        if member is type(None) or member is None:
            optional = True
        elif origin is Literal:
            choices = get_args(member)
        elif member in (bool, int, float, str, Path) or origin in (dict, Mapping):
            plain.append(dict if origin is not None else member)
        else:
            raise TypeError(f"parameter annotation {annotation!r} is not supported")
    return _FieldType(tuple(plain), choices, optional)


_PLAIN = (bool, int, float, str, Path, Mapping)


def _coerce(value: Any, kind: _FieldType, *, loaded: bool = False) -> Any:
    """``value`` as the field admits it, or raise ``ValueError`` saying what it expected."""
    if value is None:
        if kind.optional:
            return None
        raise ValueError(f"expected {kind.describe()}, got none")
    if kind.choices is not None and value in kind.choices:
        return value
    if loaded and not isinstance(value, _PLAIN):
        return value  # an already loaded input (a scenario, a table)
    if bool in kind.plain and isinstance(value, bool):
        return value
    if int in kind.plain and _is_whole(value):
        return int(value)
    if float in kind.plain and _is_number(value):
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"expected a finite number, got {value!r}")
        return number
    if str in kind.plain and isinstance(value, str):
        return value
    if Path in kind.plain and isinstance(value, str | Path):
        return value if isinstance(value, str) else str(value)
    if dict in kind.plain and isinstance(value, Mapping):
        return dict(value)
    raise ValueError(f"expected {kind.describe()}, got {value!r}")


def _is_whole(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _check_bounds(value: Any, spec: ParameterSpec) -> None:
    if not _is_number(value):
        return
    unit = f" {spec.unit}" if spec.unit else ""
    for bound, holds, word in (
        (spec.ge, lambda b: value >= b, ">="),
        (spec.gt, lambda b: value > b, ">"),
        (spec.le, lambda b: value <= b, "<="),
        (spec.lt, lambda b: value < b, "<"),
    ):
        if bound is not None and not holds(bound):
            raise ValueError(f"must be {word} {bound:g}{unit}, got {value!r}")


def _parse_text(text: str, kind: _FieldType, spec: ParameterSpec) -> Any:
    """A value typed on the command line or in a sweep's ``--param``, by the field's type."""
    if spec.parse is not None:
        return spec.parse(text)
    stripped = text.strip()
    lowered = stripped.lower()
    if kind.optional and lowered in {"none", "null"}:
        return None
    if kind.choices is not None:
        for choice in kind.choices:
            if str(choice) == stripped:
                return choice
        raise ValueError(f"expected {kind.describe()}, got {text!r}")
    if bool in kind.plain:
        if lowered in {"true", "yes", "on", "1"}:
            return True
        if lowered in {"false", "no", "off", "0"}:
            return False
    if int in kind.plain:
        try:
            return int(stripped)
        except ValueError:
            pass
    if float in kind.plain:
        try:
            return float(stripped)
        except ValueError:
            pass
    if str in kind.plain or Path in kind.plain:
        return stripped
    raise ValueError(f"expected {kind.describe()}, got {text!r}")


# ---------------------------------------------------------------------------- the base
@dataclass(frozen=True, kw_only=True)
class Declared:
    """Base of a frozen, validated dataclass of :func:`parameter` fields.

    :class:`Parameters` (what a run's results depend on, its ``config.json``) and
    :class:`RunOptions` (how a run is carried out: processes, checkpoints, extra files) are
    both declared this way. Subclasses may override :meth:`check` for rules that involve
    several fields.
    """

    model_name: ClassVar[str] = "model"
    """The model's name in run directories, the command line and errors."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            try:
                checked = _coerce(
                    value,
                    self.field_type(field.name),
                    loaded=self.spec(field.name).loaded,
                )
                _check_bounds(checked, self.spec(field.name))
            except ValueError as error:
                raise ParameterError(
                    f"{self.model_name} {field.name}: {error}"
                ) from None
            object.__setattr__(self, field.name, checked)
        try:
            self.check()
        except ParameterError:
            raise
        except ValueError as error:
            raise ParameterError(f"{self.model_name}: {error}") from None

    def check(self) -> None:
        """Rules across fields; raise ``ValueError`` (one line) when one is broken."""

    def values(self) -> dict[str, Any]:
        """Name -> value of every field."""
        return {name: getattr(self, name) for name in self.names()}

    # ------------------------------------------------------------------ reading the fields
    @classmethod
    def names(cls) -> list[str]:
        """The parameters' names, in declaration order."""
        return [field.name for field in dataclasses.fields(cls)]

    @classmethod
    def spec(cls, name: str) -> ParameterSpec:
        """The :class:`ParameterSpec` of ``name``."""
        return _specs(cls)[name]

    @classmethod
    def field_type(cls, name: str) -> _FieldType:
        """What ``name`` admits (plain types, choices, classes)."""
        return _types(cls)[name]

    @classmethod
    def default(cls, name: str) -> Any:
        """The default value of ``name``."""
        field = next(f for f in dataclasses.fields(cls) if f.name == name)
        return field.default

    @classmethod
    def resolve_name(cls, name: str) -> str:
        """A field name from its own name or its flag (``agents`` -> ``n_agents``).

        Raises:
            ParameterError: For a name the model does not have (the message lists them).
        """
        key = name.strip().replace("-", "_")
        if key in _specs(cls):
            return key
        for field, spec in _specs(cls).items():
            if spec.flag is not None and spec.flag.replace("-", "_") == key:
                return field
        raise ParameterError(
            f"{cls.model_name} has no parameter {name!r}; parameters: "
            + ", ".join(cls.names())
        )

    # ------------------------------------------------------------------ making and changing
    @classmethod
    def from_values(
        cls, values: Mapping[str, Any], *, where: str | None = None
    ) -> Self:
        """Parameters from a mapping of names (or flags) to values; the rest default.

        Args:
            values: Name -> value.
            where: What the values came from (a file), for the error message.

        Raises:
            ParameterError: For an unknown name or a bad value.
        """
        prefix = f"{where}: " if where else ""
        try:
            resolved = {cls.resolve_name(name): value for name, value in values.items()}
            return cls(**resolved)
        except ParameterError as error:
            raise ParameterError(f"{prefix}{error}") from None

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (validated again)."""
        resolved = {self.resolve_name(name): value for name, value in changes.items()}
        return dataclasses.replace(self, **resolved)

    def changed(self, other: Parameters) -> dict[str, Any]:
        """The values of ``other`` that differ from these."""
        return {
            name: getattr(other, name)
            for name in self.names()
            if getattr(other, name) != getattr(self, name)
        }

    # ------------------------------------------------------------------ config.json
    def to_config(self) -> dict[str, Any]:
        """The JSON-ready values, in declaration order (``config.json``).

        Raises:
            ParameterError: If a parameter holds an object (an already loaded input) that a
                file cannot hold.
        """
        config: dict[str, Any] = {}
        for name in self.names():
            value = getattr(self, name)
            if value is not None and not isinstance(
                value, bool | int | float | str | dict
            ):
                raise ParameterError(
                    f"{self.model_name} {name}: a {type(value).__name__} object cannot be "
                    "written to config.json; give a file path or a bundled name"
                )
            config[name] = value
        return config

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, where: str) -> Self:
        """Parameters from a ``config.json`` mapping (unknown keys refused, one line)."""
        return cls.from_values(config, where=where)

    # ------------------------------------------------------------------ sweeps
    @classmethod
    def parse_values(cls, name: str, text: str) -> tuple[str, list[Any]]:
        """A sweep's ``NAME=V1,V2`` values, typed by the field and checked against its bounds.

        Args:
            name: A parameter name or flag.
            text: Comma-separated values.

        Returns:
            The field name and its values.

        Raises:
            ParameterError: For an unknown name, or a value of the wrong type or bounds.
        """
        field = cls.resolve_name(name)
        kind = cls.field_type(field)
        values = []
        for item in text.split(","):
            try:
                value = _coerce(_parse_text(item, kind, cls.spec(field)), kind)
                _check_bounds(value, cls.spec(field))
            except ValueError as error:
                raise ParameterError(f"{cls.model_name} {field}: {error}") from None
            values.append(value)
        return field, values


@dataclass(frozen=True, kw_only=True)
class Parameters(Declared):
    """Base of every model's declared parameters: what a run's results depend on.

    Every model has ``seed`` and ``brain``.

    Attributes:
        seed: The random seed of the run.
        brain: Who decides: ``"rules"`` or ``"llm:<litellm model>"``.
    """

    command: ClassVar[str] = ""
    """The model's ``mlm`` command group (``"urban"``)."""

    model_class: ClassVar[str] = ""
    """The import path of the model class (``"package.module.Class"``), loaded on use."""

    seed: int | None = parameter(0, "random seed (none: a fresh one)")
    brain: str = parameter(
        "rules",
        "who decides: 'rules' (offline) or 'llm:<litellm model>'",
        forkable=True,
        command_line=False,  # the shared brain flags carry it
        loaded=True,  # or a Brain
    )

    def check(self) -> None:
        """The brain setting is one the package understands."""
        if isinstance(self.brain, str):
            parse_brain_setting(self.brain)

    @classmethod
    def forkable(cls) -> list[str]:
        """The parameters a fork may change."""
        return [name for name, spec in _specs(cls).items() if spec.forkable]


@dataclass(frozen=True, kw_only=True)
class RunOptions(Declared):
    """Base of a model's run options: how a run is carried out, never what it gives.

    A model's run options (route worker processes, the checkpoint interval, an extra output
    file) are declared like its parameters, so the command line offers them as flags, but they
    are not part of ``config.json`` and change no result.
    """


def load_model_class(parameters_class: type[Parameters]) -> type[Any]:
    """The model class a parameters class names (:attr:`Parameters.model_class`).

    Raises:
        TypeError: If the name cannot be imported.
    """
    module, _, name = parameters_class.model_class.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError):
        raise TypeError(
            f"{parameters_class.__name__}.model_class {parameters_class.model_class!r} "
            "cannot be imported"
        ) from None


def _specs(cls: type[Declared]) -> dict[str, ParameterSpec]:
    cached = cls.__dict__.get("_spec_cache")
    if cached is None:
        cached = {}
        for field in dataclasses.fields(cls):
            spec = field.metadata.get("parameter")
            if spec is None:
                raise TypeError(
                    f"{cls.__name__}.{field.name}: declare it with parameter(...)"
                )
            cached[field.name] = spec
        cls._spec_cache = cached  # type: ignore[attr-defined]
    return cached


def _types(cls: type[Declared]) -> dict[str, _FieldType]:
    cached = cls.__dict__.get("_type_cache")
    if cached is None:
        hints = typing.get_type_hints(cls)
        cached = {
            field.name: _read_type(hints[field.name])
            for field in dataclasses.fields(cls)
        }
        cls._type_cache = cached  # type: ignore[attr-defined]
    return cached


# ---------------------------------------------------------------------------- command line
def _flag(name: str, spec: ParameterSpec) -> str:
    return "--" + (spec.flag or name).replace("_", "-")


def _help(cls: type[Declared], name: str, *, show_default: bool) -> str:
    spec = cls.spec(name)
    text = spec.help + (f" [{spec.unit}]" if spec.unit else "")
    if show_default:
        default = cls.default(name)
        shown = "none" if default is None else default
        text += f" (default {shown})"
    return text.replace("%", "%%")  # argparse %-formats help texts


def add_parameter_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    cls: type[Declared],
    *,
    only: Iterable[str] | None = None,
    defaults: bool = True,
    prefix: str = "parameter_",
) -> None:
    """Add one flag per command-line parameter of ``cls`` to a command.

    Every flag's value is parsed by the field's type and checked against its bounds, so a bad
    value is refused before anything runs. A bool gets ``--name/--no-name``. Flags not given
    are left out of the namespace's values (see :func:`parameters_from_arguments`).

    Args:
        parser: The command's parser or an argument group.
        cls: The model's parameters.
        only: Add only these parameters (e.g. the forkable ones).
        defaults: Show the defaults in the help (False for a fork: unchanged by default).
        prefix: The namespace attributes' prefix (``option_`` for run options).
    """
    wanted = None if only is None else set(only)
    for name in cls.names():
        spec = cls.spec(name)
        if not spec.command_line or (wanted is not None and name not in wanted):
            continue
        kind = cls.field_type(name)
        options: dict[str, Any] = {
            "dest": f"{prefix}{name}",
            "default": argparse.SUPPRESS,
            "help": _help(cls, name, show_default=defaults),
        }
        if kind.plain == (bool,) and kind.choices is None:
            options["action"] = argparse.BooleanOptionalAction
        else:
            options["type"] = _argument_type(cls, name)
            options["metavar"] = _metavar(kind, name)
        parser.add_argument(_flag(name, spec), **options)


def _metavar(kind: _FieldType, name: str) -> str:
    if kind.choices is not None:
        return "{" + ",".join(map(str, kind.choices)) + "}"
    if kind.plain[:1] == (int,):
        return "N"
    if kind.plain[:1] == (float,):
        return "X"
    return name.upper()


def _argument_type(cls: type[Declared], name: str) -> Callable[[str], Any]:
    kind = cls.field_type(name)
    spec = cls.spec(name)

    def parse(text: str) -> Any:
        try:
            value = _coerce(_parse_text(text, kind, spec), kind)
            _check_bounds(value, spec)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return value

    parse.__name__ = name  # argparse names the type in its error
    return parse


def parameters_from_arguments(
    args: argparse.Namespace, prefix: str = "parameter_"
) -> dict[str, Any]:
    """The values of the flags that were given (field name -> value).

    Args:
        args: The parsed command line.
        prefix: As given to :func:`add_parameter_arguments`.
    """
    return {
        key.removeprefix(prefix): value
        for key, value in vars(args).items()
        if key.startswith(prefix)
    }
