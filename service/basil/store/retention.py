"""One retention pass over every table that grows: what the maintenance job runs after rolling up samples."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from basil.config.schema import RetentionConfig
from basil.store import audit, fits, inventory, job_runs, plans, recommendations, slo_history
from basil.store.samples import SampleRetention, epoch, prune_samples


def apply_retention(
    session: Session, retention: RetentionConfig, now: datetime, sample_now: int | None = None
) -> dict[str, int]:
    """Delete what *retention* no longer keeps; returns rows deleted per table (and per sample level).

    *sample_now* is "now" on vCenter's clock for the sample tables (the newest sample time); it
    defaults to *now*. Open recommendations, current models, running job runs, unfinished plans and
    each vCenter's latest inventory are never deleted.
    """
    at = now.astimezone(UTC)
    counts = prune_samples(
        session,
        sample_now if sample_now is not None else epoch(at),
        SampleRetention(retention.raw, retention.five_min, retention.hourly, retention.hourly_sketches),
    )
    counts["inventory_snapshots"] = inventory.prune_inventory(session, at - retention.inventory)
    counts["models"] = fits.prune_models(session, at - retention.models)
    counts["recommendations"] = recommendations.prune_recommendations(session, at - retention.recommendations)
    counts["plans"] = plans.prune_plans(session, at - retention.plans)
    # The SLO series is kept as long as the hourly sample rollups it is read beside.
    counts["slo_history"] = slo_history.prune_slo_history(session, at - retention.hourly)
    counts["job_runs"] = job_runs.prune_runs(session, at - retention.job_runs)
    counts["audit_log"] = audit.prune_audit(session, at - retention.audit)
    return counts
