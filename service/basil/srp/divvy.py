"""The divvy of SRP §3.2: a parent's capacity shared among its children by shares, within [r, l].

:func:`divvy` is Algorithm 2; :func:`divvy_with_demand` runs it with the temporary limits of §3.2
for the R-divvy, the L-divvy and the entitlement of the array's IOPS; :func:`divvy_shares` is the
S-divvy. All are pure functions over plain lists.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

_RESERVATION = 0  # sorts before _LIMIT, so a child's r_i/w_i precedes its l_i/w_i on a tie (§3.2)
_LIMIT = 1


def divvy(
    capacity: float,
    reservations: Sequence[float],
    limits: Sequence[float],
    shares: Sequence[float],
) -> list[float]:
    """Algorithm 2: allocate ``capacity`` to children with parameters (r_i, l_i, s_i).

    Every child starts at its reservation (set RB). Walking the normalized reservations and limits
    r_i/w_i and l_i/w_i in increasing order, the water level of the children between their bounds
    (set PS) rises while the capacity allows: a child joins PS at its normalized reservation and
    leaves for LB at its normalized limit. PS then shares what is left in proportion to shares.
    O(n log n), the sort. The weights w_i = s_i / Σ s_j only rescale the sequence, so the walk
    runs on r_i/s_i and l_i/s_i directly.

    Requires 0 <= r_i <= l_i (l_i may be ``math.inf``), s_i > 0, capacity >= 0 (may be ``math.inf``:
    then every child gets its limit). When the reservations alone exceed the capacity the children
    still get their reservations, as in the paper (the loop stops at its first step).
    """
    n = len(reservations)
    if n == 0:
        return []
    if math.isinf(capacity):
        return [float(limit) for limit in limits]

    events: list[tuple[float, int, int]] = []
    for i in range(n):
        s = shares[i]
        events.append((reservations[i] / s, _RESERVATION, i))
        events.append((limits[i] / s, _LIMIT, i))
    events.sort()

    in_ps = [False] * n
    in_lb = [False] * n
    rb_cap = math.fsum(reservations)
    lb_cap = 0.0
    ps_weight = 0.0
    for level, kind, i in events:
        # Can the allocation of PS be raised to this level? (An infinite level can never be reached
        # with a finite capacity: the child is in PS and the remaining capacity is all it gets.)
        if math.isinf(level) or ps_weight * level + lb_cap + rb_cap > capacity:
            break
        if kind == _LIMIT:
            in_ps[i] = False
            in_lb[i] = True
            lb_cap += limits[i]
            ps_weight -= shares[i]
        else:
            in_ps[i] = True
            ps_weight += shares[i]
            rb_cap -= reservations[i]

    # The running sums drift in floating point; the final split uses exact sums over the sets.
    ps_members = [i for i in range(n) if in_ps[i]]
    allocation = [float(limits[i]) if in_lb[i] else float(reservations[i]) for i in range(n)]
    if ps_members:
        fixed = math.fsum(allocation[i] for i in range(n) if not in_ps[i])
        total_shares = math.fsum(shares[i] for i in ps_members)
        rest = max(capacity - fixed, 0.0)
        for i in ps_members:
            share = shares[i] / total_shares * rest
            allocation[i] = min(max(share, reservations[i]), limits[i])
    return allocation


def divvy_with_demand(
    capacity: float,
    reservations: Sequence[float],
    user_limits: Sequence[float],
    demands: Sequence[float],
    shares: Sequence[float],
) -> list[float]:
    """Algorithm 2 with the temporary limits of §3.2, for the R-divvy, L-divvy and entitlements.

    While the children together demand at least the capacity, each child's limit is temporarily its
    demand, so capacity flows to where it is used. When they demand less, the paper divvies with the
    user-set limits instead; Basil then also lifts each child's temporary reservation to its demand.
    That changes nothing whenever the paper's rule already gives every child its demand (the
    Figure 3 example among them), and otherwise keeps a child with few shares from getting a
    dynamic limit below its demand while capacity for every demand exists: without it the
    L-divvy could hand such a child less than the R-divvy, a dynamic limit under the dynamic
    reservation. With it, a child's allocation never falls as the parent's capacity grows, so a
    VM's dynamic reservation <= entitlement <= dynamic limit whenever the root's R <= arrayIOPS <= L.

    Demands must lie in [r_i, user limit] (eq. 3 guarantees it).
    """
    if math.fsum(demands) < capacity:
        return divvy(capacity, demands, user_limits, shares)
    return divvy(capacity, reservations, demands, shares)


def divvy_shares(parent_shares: float, shares: Sequence[float]) -> list[float]:
    """The S-divvy (§3.2): the parent's shares divided in the ratio of the children's static shares."""
    total = math.fsum(shares)
    if total <= 0:
        return [0.0] * len(shares)
    return [parent_shares * s / total for s in shares]
