"""What every kind of pod round shares: its datastores, its constraints and budget, and the
bookkeeping of how far it went and why it stopped.

Both searches of the balancer (:class:`basil.core.balancer._PodBalancer`, BASIL's Algorithm 1, and
:class:`basil.core.search.BestMoveSearch`) derive from :class:`PodRound`; a subclass sets ``f`` and
``before``, implements :meth:`PodRound.pod_state` and ``step``, and may add to :meth:`PodRound.outcome`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from basil.core.constraints import Budget, PlacementState
from basil.core.normalized_load import Models
from basil.core.params import BalancerParams
from basil.core.plan import STOP_NO_IMPROVING_MOVE, STOP_NOTHING_TO_BALANCE, PodOutcome, PodState
from basil.core.snapshot import Datastore


class PodRound(ABC):
    """One pod's part of a round: its datastores (those in maintenance left out), the shared
    placement state and budget, the moves and GB it spent, and its stop code and reason."""

    f: float  # the pod's imbalance now
    before: PodState  # the pod at the start of the round

    def __init__(
        self,
        *,
        name: str,
        members: Sequence[Datastore],
        models: Models,
        state: PlacementState,
        budget: Budget,
        params: BalancerParams,
        disk_sizes: Mapping[str, float],
    ) -> None:
        self.name = name
        self.params = params
        self.state = state
        self.budget = budget
        self.models = models
        self.disk_sizes = disk_sizes
        self.excluded = tuple(ds.name for ds in members if ds.maintenance)
        self.names = [ds.name for ds in members if not ds.maintenance]
        self.position = {n: i for i, n in enumerate(self.names)}
        self.d = len(self.names)
        self.P: npt.NDArray[np.float64] = np.array(
            [models.datastores[n].effective_performance for n in self.names], dtype=np.float64
        )
        self.new = [models.datastores[n].new for n in self.names]
        self.moves = 0
        self.gb = 0.0
        self.stop = ""
        self.stop_reason = ""

    def finish_if_too_few(self) -> None:
        """Done at once when fewer than two datastores take part."""
        if self.d < 2:
            self._finish(STOP_NOTHING_TO_BALANCE, f"only {self.d} datastore(s) take part in the balance")

    def _finish(self, code: str, reason: str) -> None:
        """Record why the pod stops (the first reason given stands)."""
        if not self.stop:
            self.stop, self.stop_reason = code, reason

    @property
    def done(self) -> bool:
        return bool(self.stop)

    @abstractmethod
    def pod_state(self) -> PodState:
        """The pod as the round has left it so far."""

    def outcome(self) -> PodOutcome:
        return PodOutcome(
            pod=self.name,
            threshold=self.params.imbalance_threshold,
            before=self.before,
            after=self.pod_state(),
            moves=self.moves,
            gb=self.gb,
            stop=self.stop,
            stop_reason=self.stop_reason,
            excluded=self.excluded,
        )

    def _finish_no_improving_move(self, reason: str) -> None:
        """Stop with *reason*, adding which datastores without a device model took their one unit."""
        filled = [n for n, new in zip(self.names, self.new, strict=True) if new and self.state.received[n]]
        if filled:
            reason += (
                f"; {', '.join(filled)} took the one unit a datastore without a device model may take "
                "per round: the next round, with measured models, goes on (BASIL §6.3)"
            )
        self._finish(STOP_NO_IMPROVING_MOVE, reason)
