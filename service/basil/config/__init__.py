"""Basil's configuration: one YAML file plus ``BASIL_*`` environment overrides, as frozen dataclasses.

``load_config()`` returns a validated :class:`BasilConfig` or raises one ValidationError naming every
problem; ``runtime_problems()`` adds what only this machine can tell (unset secrets, missing files).
"""

from basil.config.loader import (
    CONFIG_ENV,
    default_config_text,
    load_config,
    read_secret,
    runtime_problems,
    store_url,
    to_document,
    vcenter_password,
)
from basil.config.schema import (
    ROLES,
    AuthConfig,
    BalanceConfig,
    BasilConfig,
    DeviceConfig,
    PodConfig,
    RebalanceWindowConfig,
    RetentionConfig,
    SchedulesConfig,
    ServerConfig,
    ServerTLSConfig,
    SrpConfig,
    StoreConfig,
    TLSOptions,
    VCenterConfig,
)

__all__ = [
    "CONFIG_ENV",
    "ROLES",
    "AuthConfig",
    "BalanceConfig",
    "BasilConfig",
    "DeviceConfig",
    "PodConfig",
    "RebalanceWindowConfig",
    "RetentionConfig",
    "SchedulesConfig",
    "ServerConfig",
    "ServerTLSConfig",
    "SrpConfig",
    "StoreConfig",
    "TLSOptions",
    "VCenterConfig",
    "default_config_text",
    "load_config",
    "read_secret",
    "runtime_problems",
    "store_url",
    "to_document",
    "vcenter_password",
]
