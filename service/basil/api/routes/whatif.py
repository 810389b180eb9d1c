"""What-if answers that change nothing: consolidation on a datastore (Casale et al.) and the
capacity a trace needs for a latency target (Lu). Viewers may ask; nothing is stored."""

from __future__ import annotations

import math
from typing import Any

from flask import Blueprint

from basil.api import schemas as s
from basil.api.context import current_service
from basil.api.operations import json_body, operation
from basil.app.prediction import datastore_predictions as prediction_series
from basil.app.service import Service
from basil.app.trace_capacity import plan_trace
from basil.app.whatif import datastore_whatif
from basil.core.consolidation import whatif_from_mapping
from basil.core.trace import FORMATS
from basil.errors import BasilError

bp = Blueprint("whatif", __name__)

_NON_NEGATIVE = {"type": "number", "minimum": 0}
# An estimate is null where it is undefined: a latency of a disk that issues no IO of that kind, a
# share of a datastore that carries no IO (0/0 is no number to report).
_ESTIMATE: dict[str, Any] = {"type": ["number", "null"]}

WHATIF_DOCUMENT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["disks"],
    "properties": {
        "datastore": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "name": s.STRING,
                "queue_depth": {"type": "number", "exclusiveMinimum": 0, "description": "max_conn"},
                "max_write_conn": {"type": "number", "exclusiveMinimum": 0},
                "parallelism": {
                    "type": "number",
                    "minimum": 1,
                    "description": "m, requests the device serves at once (1: the paper's one server)",
                },
                "write_cache_ms": s.nullable("number", exclusiveMinimum=0),
                "positioning_ms": {
                    **s.nullable("number", exclusiveMinimum=0),
                    "description": "a lone random IO's latency (device model intercept): what an "
                    "interleaved sequential IO pays; null: sequential streams not corrected",
                },
                "write_cost": {
                    **s.nullable("number", minimum=1),
                    "description": "device operations per destaged small write, the RAID write "
                    "penalty (RAID 0: 1, 1/10: 2, 5: 4, 6: 6); default 1; null: cached writes free",
                },
                "destage_ms": {
                    **s.nullable("number", exclusiveMinimum=0),
                    "description": "c: device time (ms, per server) of one destaged operation, the "
                    "cache writing in sorted order; null or absent: positioning_ms / parallelism",
                },
                "stripe_kb": {
                    **s.nullable("number", exclusiveMinimum=0),
                    "description": "the RAID stripe unit (KB): an IO of w units waits for the slowest of w "
                    "devices; default 64 (assumed); null: IO sizes not taken into account",
                },
            },
        },
        "disks": {
            "type": "array",
            "minItems": 1,
            "maxItems": 10000,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "read_iops", "write_iops", "read_latency_ms", "write_latency_ms"],
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 200},
                    "read_iops": _NON_NEGATIVE,
                    "write_iops": _NON_NEGATIVE,
                    "read_latency_ms": _NON_NEGATIVE,
                    "write_latency_ms": _NON_NEGATIVE,
                    "read_oio": s.nullable("number", minimum=0),
                    "write_oio": s.nullable("number", minimum=0),
                    "group": {"type": "string", "maxLength": 200},
                    "alone": s.BOOLEAN,
                    "random_pct": {
                        **s.nullable("number", minimum=0, maximum=100),
                        "description": "share of its IOs that seek (vscsiStats); null: unknown",
                    },
                    "read_io_kb": {
                        **s.nullable("number", exclusiveMinimum=0),
                        "description": "mean read size (KB, virtualDisk.readIOSize); null: unknown",
                    },
                    "write_io_kb": {
                        **s.nullable("number", exclusiveMinimum=0),
                        "description": "mean write size (KB, virtualDisk.writeIOSize); null: unknown",
                    },
                },
            },
        },
    },
}

_PREDICTED_DISK = {
    "type": "object",
    "required": [
        "name",
        "read_iops",
        "write_iops",
        "iops",
        "read_latency_ms",
        "write_latency_ms",
        "confidence",
    ],
    "properties": {
        "name": s.STRING,
        "group": s.STRING,
        "read_iops": _ESTIMATE,
        "write_iops": _ESTIMATE,
        "iops": _ESTIMATE,
        "read_latency_ms": _ESTIMATE,
        "write_latency_ms": _ESTIMATE,
        "write_cached": {
            "type": "boolean",
            "description": "writes taken as acknowledged by a write-back cache: no interference added",
        },
        "sequential": {"type": "boolean", "description": "at most 25 % random IO"},
        "positioning_added_ms": {
            **_ESTIMATE,
            "description": "what interleaving with the other disks' streams adds to each of its IOs",
        },
        "destage_added_ms": {
            **_ESTIMATE,
            "description": "what the change in the devices' destage load adds to its reads",
        },
        "write_waits": {
            "type": "boolean",
            "description": "the cache is full (cache_full): its cached writes wait admission_wait_ms for it, "
            "or go through to the devices (write_through)",
        },
        "write_through": {
            "type": "boolean",
            "description": "a disk measured with the cache full or at its edge is beside it "
            "(full_where_measured, edge_where_measured): its cached writes go through to the devices, "
            "the RAID penalty in the foreground",
        },
        "fork_join": {
            **_ESTIMATE,
            "description": "H(w): its reads split over w devices (read_io_kb over stripe_kb) wait for the "
            "slowest, this many times what a one-unit read adds (1: within one stripe unit, or size unknown)",
        },
        "confidence": s.STRING,
    },
}

WHATIF_ANSWER: dict[str, Any] = {
    "type": "object",
    "required": ["read_mix", "write_mix", "read_iops", "write_iops", "workloads", "inputs"],
    "properties": {
        "read_mix": _ESTIMATE,
        "write_mix": _ESTIMATE,
        "read_iops": _ESTIMATE,
        "write_iops": _ESTIMATE,
        "overhead_factor": _ESTIMATE,
        "paper_read_iops": {**_ESTIMATE, "description": "eq. 3 of the paper, for comparison"},
        "paper_write_iops": {**_ESTIMATE, "description": "eq. 4 of the paper, for comparison"},
        "max_conn": _ESTIMATE,
        "write_share": _ESTIMATE,
        "parallelism": {**_ESTIMATE, "description": "m: requests the device serves at once"},
        "parallelism_source": s.STRING,
        "write_cache_ms": _ESTIMATE,
        "positioning_ms": _ESTIMATE,
        "positioning_source": s.STRING,
        "write_cost": _ESTIMATE,
        "write_cost_source": s.STRING,
        "destage_ms": {
            **_ESTIMATE,
            "description": "c: device time of one destaged operation (null without t_pos); on a "
            "datastore's route, from its device model with its disks' destaging separated where it has one",
        },
        "destage_source": {
            **s.STRING,
            "description": "where c came from: given, the device model with the destaging separated "
            "(and over how many intervals), a stand-in, or t_pos / m",
        },
        "stripe_kb": {**_ESTIMATE, "description": "the RAID stripe unit taken (null: the rule off)"},
        "stripe_source": s.STRING,
        "destage_util": {
            **_ESTIMATE,
            "description": "ΔU: what interleaving adds to the devices' share of time destaging cached writes",
        },
        "destage_saturated": {"type": "boolean", "description": "ΔU at the bound: the cache would fill"},
        "destage_demand": {
            **_ESTIMATE,
            "description": "ΔU the cached writes would need with the cache keeping up "
            "(above the bound: it fills)",
        },
        "cache_full": {
            "type": "boolean",
            "description": "the destage demand exceeds what the devices give it: the cache fills and cached "
            "writes are admitted at the rate the devices destage (destage_util at the bound); or a disk "
            "measured with the cache full (full_where_measured) is beside disks of another group",
        },
        "full_where_measured": {
            **s.array(s.STRING),
            "description": "disks whose writes were slower than a cache hit where they ran: the cache was "
            "full there; their writes count as device writes and, beside other disks, the others' cached "
            "writes go through to the devices (write_through)",
        },
        "edge_where_measured": {
            **s.array(s.STRING),
            "description": "disks whose cached writes were slower than two cache hits (the fastest cached "
            "write of the disks) where they ran: the cache filled at times there; beside disks of another "
            "group the cache is full and the cached writes of both go through to the devices",
        },
        "destage_total": {
            **_ESTIMATE,
            "description": "U¹: all the destaging together with the cache keeping up (ΔU adds to it only "
            "what the disks' own figures did not have)",
        },
        "admitted_write_iops": {
            **_ESTIMATE,
            "description": "the write IOPS the full cache admits, of the disks whose writes wait "
            "(0 when it keeps up)",
        },
        "admission_wait_ms": {
            **_ESTIMATE,
            "description": "what a cached write waits for the full cache to take it (0 when it keeps up)",
        },
        "workloads": s.array(_PREDICTED_DISK),
        "inputs": s.array({"type": "object"}),
    },
}

CAPACITY_QUESTION: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["trace", "fraction", "bound_ms"],
    "properties": {
        "trace": {
            "type": "string",
            "minLength": 1,
            "description": "SPC lines (ASU,LBA,size,opcode,timestamp) or CSV (timestamp[,size[,op]])",
        },
        "format": {"type": "string", "enum": list(FORMATS)},
        "fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "bound_ms": {"type": "number", "exclusiveMinimum": 0},
        "extra_capacity": {"type": "number", "minimum": 0},
        "rel_tol": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.4},
    },
}

_SUMMARY = {
    "type": "object",
    "properties": dict.fromkeys(("within_bound", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms"), s.NUMBER)
    | {"count": s.INTEGER},
}

CAPACITY_ANSWER: dict[str, Any] = {
    "type": "object",
    "required": [
        "fraction",
        "bound_ms",
        "requests",
        "capacity_iops",
        "capacity_full_iops",
        "overflow_fraction",
        "miser",
        "curve",
    ],
    "properties": {
        "fraction": s.NUMBER,
        "bound_ms": s.NUMBER,
        "requests": s.INTEGER,
        "duration_s": s.NUMBER,
        "mean_iops": s.N_NUMBER,
        "capacity_iops": s.NUMBER,
        "capacity_full_iops": s.NUMBER,
        "primary_requests": s.INTEGER,
        "overflow_fraction": s.NUMBER,
        "rel_tol": s.NUMBER,
        "miser": {
            "type": "object",
            "properties": {
                "extra_capacity": s.NUMBER,
                "capacity_iops": s.NUMBER,
                "primary": _SUMMARY,
                "overflow": _SUMMARY,
            },
        },
        "fcfs": _SUMMARY,
        "curve": s.array(
            {
                "type": "object",
                "required": ["fraction", "capacity_iops"],
                "properties": {"fraction": s.NUMBER, "capacity_iops": s.NUMBER},
            }
        ),
        "trace": {"type": "object"},
    },
}


@operation(
    bp, "POST", "/whatif", summary="Predict disks consolidated on one datastore", role="viewer",
    body=WHATIF_DOCUMENT, response=WHATIF_ANSWER, errors=(400,),
)  # fmt: skip
def whatif() -> Any:
    """Per disk predicted IOPS and read/write latency, and the datastore's mix (Casale et al., eq. 1–6,
    generalised to n disks in groups measured together); the inputs are shown. Nothing changes."""
    return _finite(whatif_from_mapping(json_body()).to_dict())


@operation(
    bp, "POST", "/capacity", summary="Capacity for a fraction of a trace's IOs within a bound", role="viewer",
    body=CAPACITY_QUESTION, response=CAPACITY_ANSWER, errors=(400, 413),
)  # fmt: skip
def capacity() -> Any:
    """RTT, the capacity search and Miser (Lu) on the trace sent: the capacity for the fraction, for
    100 %, the overflow and its response times under Miser, a curve of capacity against fraction."""
    return plan_trace(json_body(), "capacity question").report()


MOVE_QUESTION: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["disks"],
    "properties": {
        "disks": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1000,
            "items": {"type": "string", "minLength": 1, "maxLength": 200},
            "description": "ids of the disks to move there (vm:controller:unit)",
        }
    },
}

MOVE_ANSWER: dict[str, Any] = {
    **WHATIF_ANSWER,
    "required": [*WHATIF_ANSWER["required"], "datastore", "moved", "max_conn_source"],
    "properties": {
        **WHATIF_ANSWER["properties"],
        "datastore": s.STRING,
        "datastore_name": s.STRING,
        "moved": s.array(s.STRING),
        "max_conn_source": s.STRING,
    },
}


@operation(
    bp, "POST", "/datastores/{id}/whatif", summary="Predict disks moved to a datastore", role="viewer",
    body=MOVE_QUESTION, response=MOVE_ANSWER, errors=(400, 404),
)  # fmt: skip
def datastore_move_whatif(id: str) -> Any:
    """Every disk on the datastore and the moved ones, predicted from their newest samples where they
    run now; ``max_conn`` is the datastore's queue depth. Nothing changes."""
    svc = current_service()
    if not isinstance(svc, Service):  # the what-if reads the service's newest samples and inventory
        raise BasilError("the what-if needs the full service")
    return _finite(datastore_whatif(svc, id, list(json_body()["disks"])))


_ESTIMATES = {
    "type": "object",
    "properties": {"latency": _ESTIMATE, "read_latency": _ESTIMATE, "iops": _ESTIMATE},
}
_FIGURES = {
    "type": ["object", "null"],
    "properties": {"latency_ms": _ESTIMATE, "read_latency_ms": _ESTIMATE, "iops": _ESTIMATE},
}

PREDICTION_SERIES: dict[str, Any] = {
    "type": "object",
    "required": ["datastore", "name", "series"],
    "properties": {
        "datastore": s.STRING,
        "name": s.STRING,
        "series": s.array(
            {
                "type": "object",
                "required": ["plan", "pod", "state", "finished_at", "due_at", "predicted"],
                "properties": {
                    "plan": s.INTEGER,
                    "pod": s.STRING,
                    "state": {"type": "string", "enum": ["waiting", "measured"]},
                    "finished_at": {"type": "string", "format": "date-time"},
                    "due_at": {"type": "string", "format": "date-time"},
                    "predicted": {
                        "type": "object",
                        "properties": {
                            "device_model": _FIGURES,
                            "whatif": {
                                "type": ["object", "null"],
                                "description": "the consolidation what-if (docs/whatif.md)",
                                "properties": {
                                    "latency_ms": _ESTIMATE,
                                    "read_latency_ms": _ESTIMATE,
                                    "write_latency_ms": _ESTIMATE,
                                    "iops": _ESTIMATE,
                                    "parallelism": _ESTIMATE,
                                    "disks": s.INTEGER,
                                },
                            },
                        },
                    },
                    "measured": _FIGURES,
                    "error": {
                        "type": ["object", "null"],
                        "description": "(predicted - measured) / measured per estimator and quantity",
                        "properties": {"device_model": _ESTIMATES, "whatif": _ESTIMATES},
                    },
                },
            }
        ),
    },
}


@operation(
    bp, "GET", "/datastores/{id}/predictions", summary="A datastore's predictions against measurements",
    role="viewer", response=PREDICTION_SERIES, errors=(400, 404),
)  # fmt: skip
def datastore_predictions(id: str) -> Any:
    """Every applied plan's prediction for the datastore (device model and consolidation what-if)
    against what was measured an hour later in vCenter's time, oldest first: the error over time."""
    svc = current_service()
    if not isinstance(svc, Service):
        raise BasilError("the predictions need the full service")
    return _finite(prediction_series(svc, id))


def _finite(value: Any) -> Any:
    """The answer with every undefined estimate (NaN or infinite, as 0/0 gives for a disk without IO)
    as null: JSON has no NaN, and the document says null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
