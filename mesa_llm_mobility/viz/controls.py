"""The apps' parameter controls, declared once per app and drawn with their values shown.

Each app lists its model's parameters as :class:`Control` objects in one place (its
``controls`` module); :func:`ParameterControls` draws them (a slider, a choice or a switch
each) with the current value in the label, since a slider alone never shows its value, and
:func:`control_values` gives the values a model is built from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import solara

from mesa_llm_mobility.experiment.parameters import Declared

ControlValue = int | float | str | bool
"""What a control holds."""


@dataclass(frozen=True)
class Control:
    """One model parameter as the app offers it.

    Attributes:
        name: The keyword the model (or session) takes.
        label: What the app calls it.
        default: The value it starts at; its type makes the control (``bool``: a switch,
            ``str``: a choice among ``choices``, ``int`` or ``float``: a slider).
        minimum: Smallest slider value.
        maximum: Largest slider value.
        step: Slider step.
        choices: The values of a choice.
        unit: Written after the value (``"s"``, ``"ms"``).
        digits: Decimals shown for a ``float`` value.
    """

    name: str
    label: str
    default: ControlValue
    minimum: float | None = None
    maximum: float | None = None
    step: float | None = None
    choices: tuple[str, ...] = ()
    unit: str = ""
    digits: int = 2

    def __post_init__(self) -> None:
        kind = self.kind
        if kind in ("int", "float") and (self.minimum is None or self.maximum is None):
            raise ValueError(f"control {self.name}: a slider needs minimum and maximum")
        if kind == "choice" and self.default not in self.choices:
            raise ValueError(
                f"control {self.name}: default {self.default!r} is not among "
                f"{list(self.choices)}"
            )

    @property
    def kind(self) -> Literal["bool", "choice", "int", "float"]:
        """What draws it: ``bool`` (switch), ``choice``, ``int`` or ``float`` (slider)."""
        if isinstance(self.default, bool):
            return "bool"
        if isinstance(self.default, str):
            return "choice"
        return "int" if isinstance(self.default, int) else "float"

    @classmethod
    def from_parameter(
        cls,
        parameters_class: type[Declared],
        name: str,
        label: str,
        *,
        default: ControlValue | None = None,
        minimum: float | None = None,
        maximum: float | None = None,
        step: float | None = None,
        choices: tuple[str, ...] = (),
        digits: int = 2,
    ) -> Control:
        """The control of a model's declared parameter ``name``.

        Its default, bounds, unit and choices come from the declaration (so a slider never
        offers a value the model refuses); the app says what it calls it and, where the
        declaration leaves a side open, how far the slider reaches.

        Raises:
            ValueError: For a bound outside the declared ones.
        """
        spec = parameters_class.spec(name)
        kind = parameters_class.field_type(name)
        declared_low = spec.ge if spec.ge is not None else spec.gt
        declared_high = spec.le if spec.le is not None else spec.lt
        low = minimum if minimum is not None else declared_low
        high = maximum if maximum is not None else declared_high
        if declared_low is not None and low is not None and low < declared_low:
            raise ValueError(f"control {name}: minimum {low} below the declared bound")
        if declared_high is not None and high is not None and high > declared_high:
            raise ValueError(f"control {name}: maximum {high} above the declared bound")
        value = parameters_class.default(name) if default is None else default
        return cls(
            name,
            label,
            value,
            minimum=low,
            maximum=high,
            step=step,
            choices=choices or tuple(map(str, kind.choices or ())),
            unit=spec.unit or "",
            digits=digits,
        )

    def shown(self, value: ControlValue) -> str:
        """The value as the label shows it (``70``, ``0.20``, ``150 ms``)."""
        text = f"{value:.{self.digits}f}" if self.kind == "float" else str(value)
        return f"{text} {self.unit}" if self.unit else text

    def caption(self, value: ControlValue) -> str:
        """The label with the value: ``Travellers: 70``."""
        return f"{self.label}: {self.shown(value)}"


def control_values(
    controls: Sequence[Control], values: dict[str, ControlValue] | None = None
) -> dict[str, ControlValue]:
    """Every control's value: its default unless ``values`` holds another one."""
    chosen = values or {}
    return {c.name: chosen.get(c.name, c.default) for c in controls}


@solara.component
def ControlInput(
    control: Control,
    value: ControlValue,
    on_value: Callable[[ControlValue], None],
) -> None:
    """One control, its value in its label; in a box of class ``mlm-control-<name>``."""
    label = control.caption(value)
    with solara.Column(
        gap="0px", classes=["mlm-control", f"mlm-control-{control.name}"]
    ):
        if control.kind == "bool":
            solara.Checkbox(label=control.label, value=bool(value), on_value=on_value)
        elif control.kind == "choice":
            solara.Select(
                control.label,
                values=list(control.choices),
                value=str(value),
                on_value=on_value,
            )
        else:
            whole = control.kind == "int"
            number = int if whole else float
            slider = solara.SliderInt if whole else solara.SliderFloat
            slider(
                label,
                value=number(value),
                min=number(control.minimum),
                max=number(control.maximum),
                step=number(control.step or (1 if whole else 0.1)),
                on_value=on_value,
                thumb_label=False,
            )


@solara.component
def ParameterControls(
    controls: Sequence[Control], values: solara.Reactive[dict[str, ControlValue]]
) -> None:
    """The controls of ``controls``, each showing its value, kept in ``values``."""
    current = control_values(controls, values.value)
    for control in controls:

        def change(value: ControlValue, name: str = control.name) -> None:
            values.set({**control_values(controls, values.value), name: value})

        ControlInput(control, current[control.name], change)
