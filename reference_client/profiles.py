"""The optional profiles a person switched on, and the addresses they allow (settings file).

Strategy: the reference host follows the core profile as it comes; the optional profiles
of the catalog (pinning, verified add, schema validation, private-address refusal,
untrusted marking, instruction flagging, OAuth) are switched on one by one in a settings
file beside the server configuration, so a run that does not switch them on behaves
exactly as before. The file is written like the server configuration (0600 in a 0700
directory, atomically) and read as untrusted input; a missing file means no profile.

The allowed addresses are the administrator's exceptions to private-address refusal (a
test harness's loopback mocks, a server on the LAN someone vouched for): exact addresses,
compared after normalisation (`::ffff:127.0.0.1` is 127.0.0.1), never ranges.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from mcp_host_conformance.reference_client import untrusted_json
from mcp_host_conformance.reference_client.config import (
    APP_DIR,
    ConfigError,
    config_home,
    private_dir,
    write_private,
)

__all__ = [
    "FILE_NAME",
    "PROFILES",
    "Settings",
    "SettingsStore",
    "normal_address",
]

PINNING: Final = "pinning"
VERIFIED_ADD: Final = "verified-add"
SCHEMA_VALIDATION: Final = "schema-validation"
PRIVATE_ADDRESS_REFUSAL: Final = "private-address-refusal"
UNTRUSTED_MARKING: Final = "untrusted-marking"
INSTRUCTION_FLAGGING: Final = "instruction-flagging"
OAUTH: Final = "oauth"
PROFILES: Final = (
    PINNING,
    VERIFIED_ADD,
    SCHEMA_VALIDATION,
    PRIVATE_ADDRESS_REFUSAL,
    UNTRUSTED_MARKING,
    INSTRUCTION_FLAGGING,
    OAUTH,
)
FILE_NAME = "settings.json"
MAX_SETTINGS_BYTES = 256 * 1024
MAX_ALLOWED = 64


def normal_address(text: str) -> str | None:
    """An IP address in its normal form (IPv4-mapped IPv6 as IPv4), or None if `text` is
    not one."""
    try:
        address = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


@dataclass(frozen=True)
class Settings:
    profiles: frozenset[str] = frozenset()
    allowed_addresses: tuple[str, ...] = ()
    # OAuth client settings (profile `oauth`): a client ID metadata document URL to present
    # when an authorization server supports it (SEP-991).
    client_metadata_url: str | None = None

    def has(self, profile: str) -> bool:
        return profile in self.profiles


def _from_json(document: object, path: Path) -> Settings:
    problem = f"{path} is malformed; fix or remove it"
    if not isinstance(document, dict):
        raise ConfigError(problem)
    profiles = document.get("profiles", [])
    allowed = document.get("allowed_addresses", [])
    metadata_url = document.get("client_metadata_url")
    if not isinstance(profiles, list) or not all(p in PROFILES for p in profiles):
        raise ConfigError(f"{path}: unknown profile; known: {', '.join(PROFILES)}")
    if not isinstance(allowed, list) or len(allowed) > MAX_ALLOWED:
        raise ConfigError(problem)
    normal = [normal_address(a) if isinstance(a, str) else None for a in allowed]
    if any(a is None for a in normal):
        raise ConfigError(f"{path}: an allowed address is not an IP address")
    if metadata_url is not None and not isinstance(metadata_url, str):
        raise ConfigError(problem)
    return Settings(
        frozenset(profiles),
        tuple(a for a in normal if a is not None),
        metadata_url,
    )


class SettingsStore:
    def __init__(self, environ: Mapping[str, str]) -> None:
        self.directory = config_home(environ) / APP_DIR
        self.path = self.directory / FILE_NAME

    def load(self) -> Settings:
        try:
            with open(self.path, "rb") as f:
                raw = f.read(MAX_SETTINGS_BYTES + 1)
        except FileNotFoundError:
            return Settings()
        except OSError as exc:
            raise ConfigError(f"cannot read {self.path}: {exc.strerror}") from None
        if len(raw) > MAX_SETTINGS_BYTES:
            raise ConfigError(f"{self.path} is too large; fix or remove it")
        try:
            document = untrusted_json.decode(raw)
        except untrusted_json.UntrustedJsonError as exc:
            raise ConfigError(f"{self.path} is not usable JSON ({exc}); fix or remove it") from None
        return _from_json(document, self.path)

    def save(self, settings: Settings) -> Path:
        document: dict[str, object] = {
            "version": 1,
            "profiles": sorted(settings.profiles),
            "allowed_addresses": list(settings.allowed_addresses),
        }
        if settings.client_metadata_url is not None:
            document["client_metadata_url"] = settings.client_metadata_url
        private_dir(self.directory)
        write_private(self.path, (json.dumps(document, indent=2) + "\n").encode("utf-8"))
        return self.path

    def enable(self, profiles: Iterable[str]) -> Settings:
        current = self.load()
        wanted = frozenset(profiles)
        unknown = sorted(wanted - set(PROFILES))
        if unknown:
            raise ConfigError(f"unknown profile {unknown[0]!r}; known: {', '.join(PROFILES)}")
        updated = Settings(
            current.profiles | wanted, current.allowed_addresses, current.client_metadata_url
        )
        self.save(updated)
        return updated

    def disable(self, profiles: Iterable[str]) -> Settings:
        current = self.load()
        updated = Settings(
            current.profiles - frozenset(profiles),
            current.allowed_addresses,
            current.client_metadata_url,
        )
        self.save(updated)
        return updated

    def allow(self, addresses: Iterable[str]) -> Settings:
        current = self.load()
        added = list(current.allowed_addresses)
        for text in addresses:
            address = normal_address(text)
            if address is None:
                raise ConfigError(f"{text[:64]!r} is not an IP address (give exact addresses)")
            if address not in added:
                added.append(address)
        if len(added) > MAX_ALLOWED:
            raise ConfigError(f"at most {MAX_ALLOWED} allowed addresses")
        updated = Settings(current.profiles, tuple(added), current.client_metadata_url)
        self.save(updated)
        return updated

    def set_client_metadata_url(self, url: str | None) -> Settings:
        current = self.load()
        updated = Settings(current.profiles, current.allowed_addresses, url)
        self.save(updated)
        return updated
