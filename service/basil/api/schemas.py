"""The JSON Schemas of the API's bodies and answers (OpenAPI 3.1 uses JSON Schema 2020-12 as is).

Request schemas are strict (``additionalProperties: false``) because :mod:`basil.api.validation`
enforces them: a misspelt field is an error, not silently ignored. Answer schemas list what the
contract (API-CONTRACT.md) promises and stay open to added fields, so the service can grow them.
Component schemas are referred to as ``{"$ref": "#/components/schemas/Name"}`` via :func:`ref`.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def nullable(kind: str | list[str], **more: Any) -> Schema:
    kinds = [kind] if isinstance(kind, str) else list(kind)
    return {"type": [*kinds, "null"], **more}


NUMBER = {"type": "number"}
INTEGER = {"type": "integer"}
STRING = {"type": "string"}
BOOLEAN = {"type": "boolean"}
TIME = {"type": "string", "format": "date-time"}
N_NUMBER = nullable("number")
N_STRING = nullable("string")
N_TIME = nullable("string", format="date-time")
OBJECT: Schema = {"type": "object"}

ROLES = ["viewer", "operator", "admin"]
PLAN_STATES = ["proposed", "approved", "running", "succeeded", "failed", "cancelled"]
MOVE_STATES = ["pending", "running", "succeeded", "failed", "skipped", "cancelled"]
MOVE_OUTCOMES = ("moved", "already_there", "failed", "skipped", "cancelled", "pending", "running")

# --- answers ---------------------------------------------------------------------------------------

ERROR: Schema = {
    "type": "object",
    "required": ["error", "message"],
    "properties": {
        "error": {
            "type": "string",
            "description": "machine-readable code (invalid, not_found, conflict, ...)",
        },
        "message": STRING,
        "problems": array(
            {
                "type": "object",
                "required": ["field", "message"],
                "properties": {"field": STRING, "message": STRING},
            }
        ),
        "fault": {"type": "string", "description": "vCenter's fault type, for vCenter errors"},
    },
}

HEALTH: Schema = {
    "type": "object",
    "required": ["status", "version"],
    "properties": {
        "status": {"type": "string", "description": "ok, degraded or down"},
        "version": STRING,
        "scheduler": {"type": ["string", "object", "boolean", "null"]},
        "store": {"type": ["string", "object", "boolean", "null"]},
        "vcenters": array(
            {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": STRING,
                    "connected": BOOLEAN,
                    "last_collection": N_TIME,
                    "now": {
                        **TIME,
                        "description": "now on this vCenter's clock, which every time is shown on",
                    },
                    "problems": array(ref("VCenterProblem")),
                    "next_attempt": N_TIME,
                },
            }
        ),
        "problems": array(
            {
                "type": "object",
                "description": "what makes the status degraded: the vCenter, the failing job and its error",
                "properties": {"vcenter": N_STRING, "job": STRING, "error": STRING, "at": N_TIME},
            }
        ),
    },
}

VCENTER_PROBLEM: Schema = {
    "type": "object",
    "required": ["job", "error"],
    "properties": {"job": STRING, "error": STRING, "at": N_TIME},
}

VCENTER: Schema = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": STRING,
        "server": STRING,
        "connected": BOOLEAN,
        "instance_uuid": N_STRING,
        "last_collection": N_TIME,
        "now": {**TIME, "description": "now on this vCenter's clock, which every time is shown on"},
        "message": N_STRING,
        "last_error": N_STRING,
        "last_error_at": N_TIME,
        "problems": array(ref("VCenterProblem")),
        "next_attempt": N_TIME,
        "tags": {"type": "string", "enum": ["on", "off"]},
    },
}

DATASTORE_MODEL: Schema = {
    "type": "object",
    "properties": {
        "status": STRING,
        "P": N_NUMBER,
        "slope_ms_per_oio": N_NUMBER,
        "intercept_ms": N_NUMBER,
        "r2": N_NUMBER,
        "points_used": nullable("integer"),
        "fitted_at": N_TIME,
    },
}

DATASTORE_SUMMARY: Schema = {
    "type": "object",
    "required": ["id", "name"],
    "properties": {
        "id": STRING,
        "name": STRING,
        "pod": N_STRING,
        "capacity_gb": N_NUMBER,
        "free_gb": N_NUMBER,
        "maintenance": nullable("boolean"),
        "accessible": nullable("boolean"),
        "P": N_NUMBER,
        "model_status": N_STRING,
        "load_sum_L": N_NUMBER,
        "normalized_load": N_NUMBER,
        "latency_ms": N_NUMBER,
        "read_iops": N_NUMBER,
        "write_iops": N_NUMBER,
        "iops": N_NUMBER,
    },
}

DATASTORE: Schema = {
    "allOf": [ref("DatastoreSummary"), {"type": "object", "properties": {"model": ref("DatastoreModel")}}]
}

_EFFECT_SIDE: Schema = {
    "type": "object",
    "description": "the datastore's disks as the consolidation what-if predicts them after the move",
    "properties": {
        "datastore": STRING,
        "datastore_name": STRING,
        "read_iops": NUMBER,
        "write_iops": NUMBER,
        "read_latency_ms": {**N_NUMBER, "description": "IOPS-weighted over its disks"},
        "write_latency_ms": N_NUMBER,
        "parallelism": NUMBER,
        "disks_total": INTEGER,
        "disks": array(
            {
                "type": "object",
                "properties": {
                    "disk": STRING,
                    "iops": NUMBER,
                    "read_latency_ms": NUMBER,
                    "write_latency_ms": NUMBER,
                },
            }
        ),
    },
}

MOVE: Schema = {
    "type": "object",
    "required": ["disk", "to"],
    "properties": {
        "id": {"type": ["integer", "string"]},
        "disk": STRING,
        "vm": N_STRING,
        "vm_id": N_STRING,
        "from": N_STRING,
        "to": STRING,
        "size_gb": N_NUMBER,
        "reason_code": N_STRING,
        "reason": N_STRING,
        "from_N_before": N_NUMBER,
        "from_N_after": N_NUMBER,
        "to_N_before": N_NUMBER,
        "to_N_after": N_NUMBER,
        "imbalance_before": N_NUMBER,
        "imbalance_after": N_NUMBER,
        "state": N_STRING,
        # What happened to it, honestly (a disk found on its target was not moved: already_there).
        "outcome": {"type": "string", "enum": list(MOVE_OUTCOMES)},
        "progress": N_NUMBER,
        "task": N_STRING,
        "message": N_STRING,
        "started_at": N_TIME,
        "finished_at": N_TIME,
        "kind": {"type": "string", "enum": ["move", "swap"]},
        # The moves of both halves of one swap share it; they are judged and applied together.
        "swap_group": {"type": ["integer", "null"]},
        "slo": ref("SloMoveEffect"),
        "consolidation": nullable(
            "object",
            description="predicted IOPS and latency of the disks on the source (after they leave) and "
            "the target (after they arrive): Casale et al.'s estimators, each move on the placement "
            "before the round; null when a moved disk has no sample",
            properties={"estimator": STRING, "source": _EFFECT_SIDE, "target": _EFFECT_SIDE},
        ),
    },
}

POD: Schema = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": STRING,
        "vcenter": N_STRING,
        "mode": STRING,
        "imbalance": N_NUMBER,
        "threshold": N_NUMBER,
        "storage_pod": N_STRING,
        "datastores": array(ref("DatastoreSummary")),
        "pending_moves": {"type": ["integer", "array", "null"]},
        "recent_moves": array(ref("Move")),
        "last_recommendation": {"type": ["object", "string", "null"]},
        "prediction_error": {"anyOf": [ref("PredictionError"), {"type": "null"}]},
    },
}

POD_HISTORY: Schema = {
    "type": "object",
    "properties": {
        "pod": STRING,
        "imbalance": array({"type": "object", "properties": {"t": TIME, "value": N_NUMBER}}),
        "datastores": array(
            {
                "type": "object",
                "properties": {
                    "id": STRING,
                    "name": STRING,
                    "points": array({"type": "object", "properties": {"t": TIME, "N": N_NUMBER}}),
                },
            }
        ),
    },
}

MODEL_POINT: Schema = {
    "type": "object",
    "required": ["oio", "latency_ms"],
    "properties": {"oio": NUMBER, "latency_ms": NUMBER, "t": TIME},
}

LOAD_POINT: Schema = {
    "type": "object",
    "required": ["t"],
    "properties": {"t": TIME, "N": N_NUMBER, "latency_ms": N_NUMBER, "iops": N_NUMBER},
}

QOS: Schema = {
    "type": "object",
    "properties": {
        "reservation": N_NUMBER,
        "limit": {"type": ["number", "null"], "description": "-1 means unlimited"},
        "shares": N_NUMBER,
        "entitlement": N_NUMBER,
        "demand": N_NUMBER,
    },
}

DISK_DETAIL: Schema = {
    "type": "object",
    "required": ["id"],
    "properties": {
        "id": STRING,
        "instance": N_STRING,
        "label": N_STRING,
        "datastore": N_STRING,
        "datastore_name": N_STRING,
        "size_gb": N_NUMBER,
        "pool": N_STRING,
        "model": {"type": ["object", "null"]},
        "srp": {"anyOf": [ref("Qos"), {"type": "null"}]},
    },
}

VM: Schema = {
    "type": "object",
    "required": ["id", "disks"],
    "properties": {
        "id": STRING,
        "name": STRING,
        "host": N_STRING,
        "power_state": N_STRING,
        "pools": array(
            {"type": "object", "properties": {"pool_tree": STRING, "datastore": N_STRING}},
        ),
        "disks": array(ref("DiskDetail")),
    },
}

WORKLOAD_POINT: Schema = {
    "type": "object",
    "properties": {
        "t": TIME,
        "oio": N_NUMBER,
        "io_size_kb": N_NUMBER,
        "read_pct": N_NUMBER,
        "random_pct": N_NUMBER,
        "L": N_NUMBER,
    },
}

DISK_MODEL: Schema = {
    "type": "object",
    "properties": {
        "disk": STRING,
        "points": array(ref("WorkloadPoint")),
        "p90": array(ref("WorkloadPoint")),
        "current": {"anyOf": [ref("WorkloadPoint"), {"type": "null"}]},
    },
}

LOAD_STATE: Schema = {
    "type": "object",
    "properties": {
        "imbalance": N_NUMBER,
        "normalized_load": {"type": ["object", "array", "null"]},
        # The keys of normalized_load by datastore name, and the same loads as a list with API ids.
        "names": {"type": "object", "additionalProperties": STRING},
        "datastores": array(
            {
                "type": "object",
                "required": ["id", "name"],
                "properties": {"id": STRING, "name": STRING, "normalized_load": N_NUMBER},
            }
        ),
    },
}

PINNED_BLOCKING: Schema = {
    "type": "object",
    "description": "disks that would lower the pod's imbalance after the round had they been free to move",
    "required": ["vm", "disks", "code", "reason"],
    "properties": {
        "vm": STRING,
        "vm_name": STRING,
        "disks": array(STRING),
        "datastore": STRING,
        "datastore_name": STRING,
        "code": {"type": "string", "enum": ["ping_pong", "excluded_vm", "anti_affinity"]},
        "reason": STRING,
        "best_target": STRING,
        "best_target_name": STRING,
        "imbalance_if_moved": NUMBER,
    },
}

SLO_GROUP: Schema = {
    "type": "object",
    "description": "a priority group of the SLO goal in one round (docs/slo.md): response times are reads, "
    "IOPS-weighted over the group's active disks; damage is sum((RT - DRT)^2 / DRT) over disks above the DRT",
    "required": ["name", "drt_ms", "damage_before", "damage_after"],
    "properties": {
        "name": STRING,
        "drt_ms": NUMBER,
        "disks": INTEGER,
        "iops": NUMBER,
        "measured_ms": N_NUMBER,
        "predicted_ms_before": N_NUMBER,
        "predicted_ms_after": N_NUMBER,
        "damage_before": NUMBER,
        "damage_after": NUMBER,
        "measured_damage": N_NUMBER,
        "measured_within_drt": N_NUMBER,
        "within_drt_after": BOOLEAN,
        "miss_ms": NUMBER,
    },
}

SLO_HISTORY_QUERY: dict[str, Schema] = {
    "since": {
        "type": "string",
        "format": "date-time",
        "description": "only rounds at or after this time (ISO 8601, vCenter's clock)",
    },
    "until": {
        "type": "string",
        "format": "date-time",
        "description": "only rounds at or before this time (ISO 8601, vCenter's clock)",
    },
}

SLO_HISTORY: Schema = {
    "type": "object",
    "description": "one point per round of a pod with goal slo (docs/slo.md), oldest first",
    "required": ["pod", "goal", "points"],
    "properties": {
        "pod": STRING,
        "goal": {"type": "string", "enum": ["balance", "slo"]},
        "points": array(
            {
                "type": "object",
                "required": ["at", "damage_before", "damage_after", "groups"],
                "properties": {
                    "at": TIME,
                    "round_id": nullable("string"),
                    "damage_before": NUMBER,
                    "damage_after": NUMBER,
                    "measured_damage": N_NUMBER,
                    "groups": array(
                        {
                            "type": "object",
                            "required": ["name", "drt_ms"],
                            "properties": {
                                "name": STRING,
                                "drt_ms": NUMBER,
                                "disks": INTEGER,
                                "measured_ms": N_NUMBER,
                                "predicted_ms_before": N_NUMBER,
                                "predicted_ms_after": N_NUMBER,
                                "damage_before": N_NUMBER,
                                "damage_after": N_NUMBER,
                                "measured_damage": N_NUMBER,
                                "measured_within_drt": N_NUMBER,
                            },
                        }
                    ),
                },
            }
        ),
    },
}

SLO_ROUND: Schema = {
    "type": "object",
    "description": "the SLO section of a round of a pod with goal slo (latency targets per priority group)",
    "required": ["goal", "groups", "damage_before", "damage_after"],
    "properties": {
        "goal": {"type": "string", "enum": ["slo"]},
        "queue_model": {"type": "string", "enum": ["priority", "fcfs"]},
        "utilisation_cap_pct": NUMBER,
        "damage_before": NUMBER,
        "damage_after": NUMBER,
        "groups": array(ref("SloGroup")),
        "unmet": array(STRING),
        "priorities": {"type": "object", "additionalProperties": NUMBER},
        "datastores": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "name": STRING,
                    "tier_model": {"type": "string", "enum": ["table", "table+P", "fit"]},
                    "device_kind": STRING,
                    "devices": NUMBER,
                    "service_ms": NUMBER,
                    "calibration": NUMBER,
                    "utilisation_before": NUMBER,
                    "utilisation_after": NUMBER,
                },
            },
        },
    },
}

SLO_MOVE_EFFECT: Schema = {
    "type": "object",
    "description": "an SLO move's predicted effect: the affected groups' response times and the pod's damage",
    "required": ["damage_before", "damage_after", "groups"],
    "properties": {
        "damage_before": NUMBER,
        "damage_after": NUMBER,
        "groups": array(
            {
                "type": "object",
                "properties": {"group": STRING, "rt_ms_before": N_NUMBER, "rt_ms_after": N_NUMBER},
            }
        ),
    },
}

RECOMMENDATION: Schema = {
    "type": "object",
    "required": ["id", "moves", "valid", "state"],
    "properties": {
        "id": {"type": ["integer", "string", "null"], "description": "null when there is no move to keep"},
        "pod": STRING,
        "created_at": TIME,
        "before": ref("LoadState"),
        "after": ref("LoadState"),
        "threshold": N_NUMBER,
        "stop": N_STRING,
        "stop_reason": N_STRING,
        "notes": array(STRING),
        "moves": array(ref("Move")),
        "valid": {
            "type": "boolean",
            "description": "false once the placement it was computed from changed: it cannot become a plan",
        },
        "state": {
            "type": "string",
            "enum": ["current", "stale", "planned", "dismissed", "superseded"],
            "description": "current: may become a plan; stale: a move changed the placement it was computed "
            "from (stale_reason says which); otherwise its moves were planned, dismissed or superseded",
        },
        "stale_reason": N_STRING,
        "models_changed": {"type": "boolean", "description": "models were refitted since it was computed"},
        "pinned_blocking": array(ref("PinnedBlocking")),
        "pinned_blocking_total": INTEGER,
        "slo": ref("SloRound"),
    },
}

PREDICTION_ERROR: Schema = {
    "type": "object",
    "description": "latency and iops: median |predicted - measured| / measured over the pod's datastores "
    "with IO; imbalance_rel: (predicted - measured) / measured",
    "properties": {
        "plan": INTEGER,
        "due_at": N_TIME,
        "latency_median_abs": N_NUMBER,
        "read_latency_median_abs": N_NUMBER,
        "iops_median_abs": N_NUMBER,
        "imbalance_abs": N_NUMBER,
        "imbalance_rel": N_NUMBER,
    },
}

_FIGURES: Schema = nullable(
    "object",
    properties={
        "latency_ms": {**N_NUMBER, "description": "IOPS-weighted over reads and writes"},
        "read_latency_ms": N_NUMBER,
        "iops": N_NUMBER,
        "read_oio": N_NUMBER,
        "write_oio": N_NUMBER,
    },
)

PREDICTION_CHECK: Schema = {
    "type": "object",
    "description": "an applied plan's prediction for its pod, measured an hour later in vCenter's time",
    "required": ["plan", "pod", "state", "finished_at", "due_at", "imbalance", "datastores"],
    "properties": {
        "plan": INTEGER,
        "pod": STRING,
        "state": {"type": "string", "enum": ["waiting", "measured"]},
        "finished_at": {**TIME, "description": "the plan's end, vCenter's time"},
        "due_at": {**TIME, "description": "the measurement time: an hour after the end, vCenter's time"},
        "measured_at": N_TIME,
        "moves": nullable("integer"),
        "imbalance": {
            "type": "object",
            "properties": {"predicted": N_NUMBER, "predicted_by_round": N_NUMBER, "measured": N_NUMBER},
        },
        "error": {"anyOf": [ref("PredictionError"), {"type": "null"}]},
        "datastores": array(
            {
                "type": "object",
                "required": ["datastore", "name", "predicted"],
                "properties": {
                    "datastore": STRING,
                    "name": STRING,
                    "model": {"type": ["string", "null"], "enum": ["fit", "stand_in", "none", None]},
                    "predicted": _FIGURES,
                    "measured": _FIGURES,
                    "error": nullable(
                        "object", properties={"latency": N_NUMBER, "read_latency": N_NUMBER, "iops": N_NUMBER}
                    ),
                },
            }
        ),
    },
}

PLAN: Schema = {
    "type": "object",
    "required": ["id", "state", "moves"],
    "properties": {
        "id": {"type": ["integer", "string"]},
        "pod": N_STRING,
        "state": {"type": "string", "enum": PLAN_STATES},
        "created_at": TIME,
        "updated_at": N_TIME,
        "recommendation_id": {"type": ["integer", "string", "null"]},
        "progress": N_NUMBER,
        # How many moves had each outcome (moved, already_there, failed, skipped, cancelled, ...).
        "outcomes": {"type": "object", "additionalProperties": INTEGER},
        "moves": array(ref("Move")),
    },
}

PLACEMENT_RESULT: Schema = {
    "type": "object",
    "properties": {
        "pod": STRING,
        "ranked": array(OBJECT),
        "excluded": array(OBJECT),
    },
}

# The nodes of a pool tree, as `basil srp` reads them and the service stores them. Requests refer to
# them by $ref, which basil.api.validation does not follow: the SRP validation checks a tree in full
# and reports every problem at once with its path, so the schema here documents, it does not enforce.
_POOL_CONTROL_PROPERTIES: Schema = {
    "reservation": {"type": "number", "minimum": 0, "description": "IOPS; 0 when absent"},
    "limit": {
        "anyOf": [{"type": "number", "minimum": 0}, {"const": "unlimited"}],
        "description": "IOPS, or 'unlimited' (the default)",
    },
    "shares": {
        "anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"enum": ["low", "normal", "high"]}],
        "description": "a number, or low/normal/high = 500/1000/2000; normal when absent",
    },
}

POOL_CONTROLS: Schema = {
    "type": "object",
    "additionalProperties": False,
    "properties": _POOL_CONTROL_PROPERTIES,
}

POOL_NODE: Schema = {
    "description": "a pool (name, children), a VM or disk leaf (vm, disk), or a tag leaf (tag) standing for "
    "every VM that carries the vSphere tag, each with the tag leaf's settings. A VM is reached once: by name "
    "or by tags of one pool",
    "oneOf": [
        {
            "title": "pool",
            "type": "object",
            "additionalProperties": False,
            "required": ["name"],
            "properties": {"name": STRING, **_POOL_CONTROL_PROPERTIES, "children": array(ref("PoolNode"))},
        },
        {
            "title": "VM or disk leaf",
            "type": "object",
            "additionalProperties": False,
            "required": ["vm"],
            "properties": {
                "vm": {"type": "string", "description": "the VM's name or managed object id"},
                "disk": {"type": "string", "description": "one virtual disk, like scsi0:1"},
                **_POOL_CONTROL_PROPERTIES,
            },
        },
        {
            "title": "tag leaf",
            "type": "object",
            "additionalProperties": False,
            "required": ["tag"],
            "properties": {
                "tag": {
                    "type": "string",
                    "pattern": "^[^/]+/.+$",
                    "description": "category/name of a vSphere tag; its VMs are read from vCenter at "
                    "every control step",
                },
                **_POOL_CONTROL_PROPERTIES,
            },
        },
    ],
}

POOL_TREE: Schema = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": STRING,
        "datastore": N_STRING,
        "version": INTEGER,
        "root": {"anyOf": [ref("PoolControls"), {"type": "null"}]},
        "pools": {"type": ["array", "null"], "items": ref("PoolNode")},
    },
}

POOL_PROBLEMS: Schema = {
    "type": "object",
    "required": ["valid", "problems"],
    "properties": {
        "valid": BOOLEAN,
        "problems": ERROR["properties"]["problems"],
    },
}

ENTITLEMENTS: Schema = {
    "type": "object",
    "properties": {
        "pool": STRING,
        "datastore": N_STRING,
        "array_iops": N_NUMBER,
        "vms": array(OBJECT),
        "hosts": array({"type": "object", "properties": {"host": STRING, "queue_depth": N_NUMBER}}),
    },
}

JOB: Schema = {
    "type": "object",
    "required": ["id"],
    "properties": {
        "id": STRING,
        "name": N_STRING,
        "trigger": N_STRING,
        "schedule": {
            "type": ["object", "null"],
            "description": "as configured: {kind: interval, every_s} or "
            "{kind: cron, cron, timezone, duration_s}",
        },
        "next_run": N_TIME,
        "last_run": {
            "type": ["object", "null"],
            "properties": {
                "started": N_TIME,
                "finished": N_TIME,
                "outcome": N_STRING,
                "message": N_STRING,
            },
        },
    },
}

JOB_RUN: Schema = {
    "type": "object",
    "required": ["job", "outcome"],
    "properties": {
        "id": INTEGER,
        "job": STRING,
        "started": N_TIME,
        "finished": N_TIME,
        "outcome": {
            "type": "string",
            "enum": ["running", "succeeded", "failed", "skipped"],
            "description": "running from the moment a run is accepted until it ends",
        },
        "message": N_STRING,
        "details": OBJECT,
    },
}

REBALANCE_WINDOW: Schema = {
    "type": "object",
    "properties": {
        "cron": STRING,
        "timezone": STRING,
        "duration": STRING,
        "max_moves": INTEGER,
        "max_gb": NUMBER,
        "enabled": BOOLEAN,
        "next_window": {"type": ["object", "array", "string", "null"]},
        "changed": {
            "description": "the fields changed through PUT /schedules/rebalance, kept in the store and "
            "applied over the configuration file's window at every start (they win over the file and its "
            "environment overrides); null while the file's window is in force. DELETE "
            "/schedules/rebalance forgets them.",
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"fields": OBJECT, "at": TIME, "by": STRING},
                    "required": ["fields", "at", "by"],
                },
                {"type": "null"},
            ],
        },
    },
}

SCHEDULES: Schema = {
    "type": "object",
    "properties": {
        "rebalance": ref("RebalanceWindow"),
        "jobs": array(OBJECT),
        "pods": {
            "type": "object",
            "description": "per pod name: its mode and rebalance window",
            "additionalProperties": {
                "type": "object",
                "properties": {"mode": STRING, "rebalance": ref("RebalanceWindow")},
            },
        },
    },
}

AUDIT_ENTRY: Schema = {
    "type": "object",
    "required": ["at", "who", "action", "outcome"],
    "properties": {
        "id": INTEGER,
        "at": TIME,
        "who": STRING,
        "via": STRING,
        "action": STRING,
        "target": STRING,
        "from": STRING,
        "outcome": STRING,
        "message": STRING,
        "detail": OBJECT,
    },
}

TOKEN_INFO: Schema = {
    "type": "object",
    "required": ["name", "role", "active"],
    "properties": {
        "name": STRING,
        "role": {"type": "string", "enum": ROLES},
        "id": STRING,
        "active": BOOLEAN,
        "created_at": TIME,
        "created_by": STRING,
        "expires_at": N_TIME,
        "last_used_at": N_TIME,
        "revoked_at": N_TIME,
    },
}

NEW_TOKEN: Schema = {
    "allOf": [
        ref("TokenInfo"),
        {
            "type": "object",
            "required": ["token"],
            "properties": {"token": {"type": "string", "description": "shown once; Basil keeps only a hash"}},
        },
    ]
}

ME: Schema = {
    "type": "object",
    "required": ["name", "role", "via"],
    "properties": {"name": STRING, "role": {"type": "string", "enum": ROLES}, "via": STRING},
}

# --- requests (strict) -----------------------------------------------------------------------------

_ID = {"type": "string", "minLength": 1, "maxLength": 200}

CREATE_PLAN: Schema = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "recommendation_id": {"type": ["integer", "string"]},
        "pod": {"type": "string", "minLength": 1, "maxLength": 63},
        "moves": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1000,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["disk", "to"],
                "properties": {"disk": _ID, "to": _ID},
            },
        },
    },
    "oneOf": [{"required": ["recommendation_id"]}, {"required": ["pod", "moves"]}],
}

PLACEMENT_REQUEST: Schema = {
    "type": "object",
    "additionalProperties": False,
    "required": ["pod", "size_gb", "oio", "io_size_kb", "read_pct", "random_pct"],
    "properties": {
        "pod": {"type": "string", "minLength": 1, "maxLength": 63},
        "size_gb": {"type": "number", "exclusiveMinimum": 0},
        "oio": {"type": "number", "minimum": 0},
        "io_size_kb": {"type": "number", "exclusiveMinimum": 0, "maximum": 4096},
        "read_pct": {"type": "number", "minimum": 0, "maximum": 100},
        "random_pct": {"type": "number", "minimum": 0, "maximum": 100},
        "vm": _ID,
        "hosts": {"type": "array", "items": _ID, "maxItems": 1000},
    },
}

POOL_DOCUMENT: Schema = {
    "type": "object",
    "description": "a pool tree as `basil srp` reads it, for one datastore; checked in full by the SRP "
    "validation (every problem at once, each with its path such as pools[0].children[1].tag)",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 63},
        "version": {"type": "integer", "minimum": 0},
        "datastore": {"type": "string", "description": "the datastore's name or managed object id"},
        "vcenter": {"type": "string", "description": "a configured vCenter's name (the first by default)"},
        "sioc": {"type": "boolean", "description": "enable SIOC on the datastore with L_c as its threshold"},
        "root": {"anyOf": [ref("PoolControls"), {"type": "null"}]},
        "pools": {"type": ["array", "null"], "items": ref("PoolNode")},
    },
}

POOL_REPLACE: Schema = {
    "type": "object",
    "description": "a pool tree with the version it replaces (409 if another change came first)",
    "required": ["name", "version"],
    "properties": POOL_DOCUMENT["properties"],
}

# Five cron fields (minute hour day-of-month month day-of-week) of numbers, names, *, ranges, lists and
# steps, or a macro such as @daily; the service checks the values' ranges.
_CRON_ITEM = "(\\*|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?"
_CRON_FIELD = f"{_CRON_ITEM}(,{_CRON_ITEM})*"
CRON_PATTERN = f"^(@[a-z]+|{_CRON_FIELD}( +{_CRON_FIELD}){{4}})$"

REBALANCE_REQUEST: Schema = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {
        "enabled": BOOLEAN,
        "cron": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": CRON_PATTERN},
        "timezone": {"type": "string", "minLength": 1, "maxLength": 64},
        "duration": {"type": "string", "minLength": 1, "maxLength": 32},
        "max_moves": {"type": "integer", "minimum": 0},
        "max_gb": {"type": "number", "minimum": 0},
    },
}

CREATE_TOKEN: Schema = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "role"],
    "properties": {
        "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$"},
        "role": {"type": "string", "enum": ROLES},
        "expires_in": {
            "type": "string",
            "minLength": 2,
            "pattern": "^([1-9][0-9]{0,3}w)?([1-9][0-9]{0,3}d)?([1-9][0-9]{0,3}h)?([1-9][0-9]{0,3}m)?"
            "([1-9][0-9]{0,3}s)?$",
            "description": "e.g. 90d, 12h, 1w3d: whole numbers of w, d, h, m, s in that order, each 1-9999",
        },
    },
}


def list_page(item: str) -> Schema:
    """A page of a list: its items and the cursor of the next page (null on the last page)."""
    return {
        "type": "object",
        "required": ["items", "next_cursor"],
        "properties": {"items": array(ref(item)), "next_cursor": N_STRING},
    }


_NAMED_REF: Schema = {
    "type": "object",
    "required": ["id", "name"],
    "properties": {"id": STRING, "name": STRING},
}

DATASTORE_LIST_ITEM: Schema = {
    "allOf": [
        ref("DatastoreSummary"),
        {
            "type": "object",
            "required": ["vcenter", "pod"],
            "properties": {"vcenter": STRING, "type": STRING, "tags": array(STRING)},
        },
    ]
}

VM_LIST_ITEM: Schema = {
    "type": "object",
    "required": ["id", "name", "pod", "datastores", "disks"],
    "properties": {
        "id": STRING,
        "name": STRING,
        "vcenter": STRING,
        "pod": N_STRING,
        "pods": array(STRING),
        "power_state": STRING,
        "host": N_STRING,
        "host_name": N_STRING,
        "datastores": array(_NAMED_REF),
        "disks": INTEGER,
        "size_gb": NUMBER,
        "iops": N_NUMBER,
        "latency_ms": N_NUMBER,
        "tags": array(STRING),
    },
}

DISK_LIST_ITEM: Schema = {
    "type": "object",
    "required": ["id", "unit", "label", "vm", "datastore", "size_gb"],
    "properties": {
        "id": STRING,
        "unit": STRING,
        "label": STRING,
        "vcenter": STRING,
        "vm": _NAMED_REF,
        "datastore": _NAMED_REF,
        "pod": N_STRING,
        "size_gb": NUMBER,
        "thin": BOOLEAN,
        "iops": N_NUMBER,
        "latency_ms": N_NUMBER,
        "oio": N_NUMBER,
        "L": N_NUMBER,
    },
}

COMPONENTS: dict[str, Schema] = {
    "DatastoreListItem": DATASTORE_LIST_ITEM,
    "VMListItem": VM_LIST_ITEM,
    "DiskListItem": DISK_LIST_ITEM,
    "Error": ERROR,
    "Health": HEALTH,
    "VCenter": VCENTER,
    "VCenterProblem": VCENTER_PROBLEM,
    "DatastoreModel": DATASTORE_MODEL,
    "DatastoreSummary": DATASTORE_SUMMARY,
    "Datastore": DATASTORE,
    "Move": MOVE,
    "Pod": POD,
    "PodHistory": POD_HISTORY,
    "ModelPoint": MODEL_POINT,
    "LoadPoint": LOAD_POINT,
    "Qos": QOS,
    "DiskDetail": DISK_DETAIL,
    "VM": VM,
    "WorkloadPoint": WORKLOAD_POINT,
    "DiskModel": DISK_MODEL,
    "LoadState": LOAD_STATE,
    "Recommendation": RECOMMENDATION,
    "PinnedBlocking": PINNED_BLOCKING,
    "SloRound": SLO_ROUND,
    "SloGroup": SLO_GROUP,
    "SloMoveEffect": SLO_MOVE_EFFECT,
    "SloHistory": SLO_HISTORY,
    "PredictionError": PREDICTION_ERROR,
    "PredictionCheck": PREDICTION_CHECK,
    "Plan": PLAN,
    "PlacementResult": PLACEMENT_RESULT,
    "PoolTree": POOL_TREE,
    "PoolControls": POOL_CONTROLS,
    "PoolNode": POOL_NODE,
    "PoolProblems": POOL_PROBLEMS,
    "Entitlements": ENTITLEMENTS,
    "Job": JOB,
    "JobRun": JOB_RUN,
    "RebalanceWindow": REBALANCE_WINDOW,
    "Schedules": SCHEDULES,
    "AuditEntry": AUDIT_ENTRY,
    "TokenInfo": TOKEN_INFO,
    "NewToken": NEW_TOKEN,
    "Me": ME,
    "CreatePlan": CREATE_PLAN,
    "PlacementRequest": PLACEMENT_REQUEST,
    "PoolDocument": POOL_DOCUMENT,
    "PoolReplace": POOL_REPLACE,
    "RebalanceRequest": REBALANCE_REQUEST,
    "CreateToken": CREATE_TOKEN,
}
