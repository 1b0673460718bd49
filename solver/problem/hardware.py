"""What a hardware entry changes on its card: pod size overrides and the power caps offered.

    hardware:
      - type: h100-sxm
        devices_per_node: 4            # a 4-GPU server instead of the card's 8
        scale_up_domain_devices: 4     # and an NVLink domain of that size
        power_caps_w: [700, 550, 400]  # each a separate option (the card's power_curve)
"""

from __future__ import annotations

from solver.errors import InputError
from solver.schema.cards import HardwareCard
from solver.schema.problem import HardwareEntry
from solver.schema.yamlio import YamlDoc


def _where(doc: YamlDoc, loc: tuple) -> str:
    line = doc.line_of(loc)
    return f"{doc.path}:{line if line is not None else '?'}"


def entry_card(doc: YamlDoc, j: int, h: HardwareEntry, card: HardwareCard) -> HardwareCard:
    """The card with the entry's devices_per_node / scale_up_domain_devices (a pod of another
    size: the scale-up domain must hold at least one node)."""
    if h.devices_per_node is None and h.scale_up_domain_devices is None:
        return card
    per_node = h.devices_per_node or card.devices_per_node
    domain = h.scale_up_domain_devices or card.scale_up.domain_devices
    if h.scale_up_domain_devices is None and h.devices_per_node is not None:
        domain = max(domain, per_node)
    if domain < per_node:
        field = "scale_up_domain_devices" if h.scale_up_domain_devices is not None else "devices_per_node"
        raise InputError(
            f"{_where(doc, ('hardware', j, field))}: hardware[{j}].{field}: the scale-up domain "
            f"({domain} devices) must hold a whole node ({per_node} devices)")
    scale_up = card.scale_up.model_copy(update={"domain_devices": domain})
    return card.model_copy(update={"devices_per_node": per_node, "scale_up": scale_up})


def entry_caps(doc: YamlDoc, j: int, h: HardwareEntry, card: HardwareCard) -> tuple[float, ...]:
    """The power limits the planner may run this type at (W, highest first); without
    `power_caps_w` the one power the type has (the entry's power_w or the card's)."""
    if h.power_caps_w is None:
        return (float(h.power_w or card.power_w),)
    loc = ("hardware", j, "power_caps_w")
    if card.power_curve is None:
        raise InputError(f"{_where(doc, loc)}: hardware[{j}].power_caps_w: {card.name} has no "
                         "power_curve on its card (give an inline card with one)")
    if h.power_w is not None:
        raise InputError(f"{_where(doc, loc)}: hardware[{j}]: give power_w or power_caps_w, not both")
    lo, hi = card.power_curve[0].power_w, card.power_curve[-1].power_w
    for i, cap in enumerate(h.power_caps_w):
        if not lo <= cap <= hi:
            raise InputError(f"{_where(doc, loc + (i,))}: hardware[{j}].power_caps_w[{i}]: {cap:g} W "
                             f"is outside {card.name}'s power curve ({lo:g}-{hi:g} W)")
    return tuple(float(c) for c in h.power_caps_w)
