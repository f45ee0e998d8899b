"""The schema an ``EvacuationMove`` request is sent: the move's route-or-offset rule in the schema.

A move needs exactly one of ``route_id`` (an offered route) or ``target_offset``; waiting and
looking around take no route. The output model states each field on its own, so a provider
decoding under it produced schema-valid answers the validator then rejected (neither field, or
both). :func:`move_request_schema` sends instead a union of complete objects, which llama.cpp's
grammar and other schema decoders keep apart:

* ``move`` with a ``route_id`` among the routes offered (none offered: no such branch);
* ``move`` with a ``target_offset``;
* ``wait`` or ``turn_and_observe``, with no ``route_id`` (a ``target_offset`` is ignored).

Each branch is closed (``additionalProperties: false``) and takes the other field only as
``null``, so no branch takes both.

The root stays ``"type": "object"`` (OpenAI refuses other roots). The validator still checks
every rule (not every provider decodes under a schema).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mesa_llm_mobility.evacuation.decision_context import EvacuationContext

_ACTION_FIELDS = ("action", "route_id", "target_offset", "waypoint_offset")
"""The fields the branches state themselves; every other field is shared by all branches."""


def move_request_schema(
    context: EvacuationContext, schema: dict[str, Any]
) -> dict[str, Any]:
    """The union schema of one request (see the module docstring).

    Args:
        context: The request's context (its offered routes).
        schema: A copy of ``EvacuationDecision``'s JSON schema.
    """
    properties = schema["properties"]
    shared = {
        name: value for name, value in properties.items() if name not in _ACTION_FIELDS
    }
    required = [
        name for name in schema.get("required", []) if name not in _ACTION_FIELDS[1:]
    ]
    if "action" not in required:
        required.insert(0, "action")
    route_ids = [option.route_id for option in context.options]
    offset = {"$ref": "#/$defs/Offset"}
    waypoint = properties["waypoint_offset"]
    null = {"type": "null"}
    branches = []
    if route_ids:
        branches.append(
            _branch(
                {
                    "action": {"const": "move"},
                    "route_id": {"enum": route_ids},
                    "target_offset": null,
                },
                shared | {"waypoint_offset": waypoint},
                [*required, "route_id"],
            )
        )
    branches.append(
        _branch(
            {"action": {"const": "move"}, "route_id": null, "target_offset": offset},
            shared | {"waypoint_offset": waypoint},
            [*required, "target_offset"],
        )
    )
    branches.append(
        _branch(
            {
                "action": {"enum": ["wait", "turn_and_observe"]},
                "route_id": null,
                "target_offset": properties["target_offset"],
                "waypoint_offset": waypoint,
            },
            shared,
            required,
        )
    )
    return {
        "type": "object",
        "title": schema.get("title", "EvacuationDecision"),
        "description": schema.get("description", ""),
        "$defs": schema.get("$defs", {}),
        "anyOf": branches,
    }


def _branch(
    own: dict[str, Any], shared: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**own, **shared},
        "required": required,
        "additionalProperties": False,
    }
