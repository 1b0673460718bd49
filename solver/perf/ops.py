"""Operator costs on arrays: roofline compute/memory time and alpha-beta collectives.

All functions take numpy arrays (one element per plan) and return seconds.
Formulas: docs/sources.md, "Roofline operator time", "All-reduce", "All-to-all" and
"Pipeline parallelism".
"""

from __future__ import annotations

import numpy as np

from solver.perf.tables import Fabric


def roofline(flops, bytes_, flops_per_s, bytes_per_s, kernel_s, kernels=1.0) -> np.ndarray:
    """max(compute, memory) per operator plus a fixed cost per kernel."""
    return np.maximum(flops / flops_per_s, bytes_ / bytes_per_s) + kernels * kernel_s


def group_links(group, domain):
    """How a group of `group` consecutive devices sits on the fabric.

    Returns (devices per scale-up island k, islands m, spans_scale_out). A group inside one
    scale-up domain (8 for HGX, 72 for NVL72 whose domain spans 18 nodes) never touches the
    scale-out network; a wider one is split into islands of `domain` devices.
    """
    inside = group <= domain
    k = np.where(inside, group, np.minimum(group, domain))
    m = np.where(inside, 1, np.ceil(group / np.maximum(k, 1)))
    return k, m, ~inside


def all_reduce(bytes_, group, f: Fabric) -> np.ndarray:
    """Ring / hierarchical all-reduce of `bytes_` per device among `group` devices.

    Inside a scale-up domain: alpha + 2(n-1)/n * S / busbw. Across domains (hierarchical):
    reduce-scatter and all-gather inside each island of k devices, and an all-reduce of S/k
    between the m islands on every device's NIC in parallel (docs/sources.md, "Achievable efficiencies", [M1]).
    """
    k, m, spans = group_links(group, f.su_domain)
    # start-up latencies: one for an all-reduce inside the domain; across domains two intra
    # phases (reduce-scatter, all-gather) and a ring of 2(m-1) steps over the scale-out links
    intra_lat = np.where(spans, 2.0 * f.su_lat, f.su_lat)
    intra = np.where(k > 1, intra_lat + 2.0 * (k - 1) / k * bytes_ / f.scale_up_bw(k), 0.0)
    inter = np.where(spans, 2.0 * (m - 1) * f.so_lat + 2.0 * (m - 1) / m * (bytes_ / k) / f.so_bw, 0.0)
    return np.where(group > 1, intra + inter, 0.0)


def all_to_all(bytes_, group, f: Fabric) -> np.ndarray:
    """All-to-all where each device sends `bytes_` spread evenly over the other devices.

    (n-1)/n of the bytes leave the device; the share bound for other scale-up islands crosses
    the NIC. Time is the slower of the two links plus their start-up latencies: one on the
    scale-up fabric, and one per remote island on the scale-out link (the NIC sends one message
    to each other node after another; GenZ charges (N-1) link latencies, docs/sources.md
    "All-to-all", and DeepEP's measured low-latency dispatch grows with the rank count).
    """
    k, m, spans = group_links(group, f.su_domain)
    n = np.maximum(group, 1)
    local_share = (k - 1) / n
    remote_share = (n - k) / n
    t_su = f.su_lat + bytes_ * local_share / f.scale_up_bw(k)
    t_so = np.where(spans, (m - 1) * f.so_lat + bytes_ * remote_share / f.so_bw, 0.0)
    return np.where(group > 1, np.maximum(t_su, t_so), 0.0)


def p2p(bytes_, crosses_domain, f: Fabric) -> np.ndarray:
    """Point-to-point send of `bytes_` (pipeline stage hand-off): one link."""
    one_link = f.scale_up_bw(np.full_like(f.su_bw, 2.0))
    return np.where(crosses_domain, f.so_lat + bytes_ / f.so_bw, f.su_lat + bytes_ / one_link)
